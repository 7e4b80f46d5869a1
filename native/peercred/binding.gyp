# The SO_PEERCRED addon (peercred.c): built by the root package's install
# script (npm ci / npm rebuild) with the node-gyp npm ships, against the
# machine's Node headers; nothing is downloaded.
{
  "targets": [
    {
      "target_name": "peercred",
      "sources": ["peercred.c"],
      "cflags": ["-Wall", "-Wextra", "-Werror", "-O2"],
    }
  ]
}
