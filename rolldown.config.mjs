// The shipped `mailsvc` command: tsc's output for src/cli/bin.ts bundled into a
// few files (one per lazily loaded part), because Node loads one large file far
// faster than Kysely's and commander's hundreds of small ones: the CLI's
// start-up is most of a short command's time. Packages with native code or
// files of their own loaded at run time stay in node_modules.
import { chmodSync, rmSync } from 'node:fs';
import process from 'node:process';
import { defineConfig } from 'rolldown';

// Where the bundle goes: scripts/build.mjs writes it into a directory of its own and renames it into place.
const OUT = process.env.MAILSVC_BUNDLE_DIR || 'dist/bundle';
// Chunk names carry hashes: clear the last build's, or they pile up.
rmSync(OUT, { recursive: true, force: true });

const STARTUP = new RegExp(
  [
    '[\\\\/]node_modules[\\\\/]commander[\\\\/]',
    '[\\\\/]dist[\\\\/]cli[\\\\/](bin|program|command-index|output|usage-errors|audit-hook|commands[\\\\/](db|secrets))\\.js',
    '[\\\\/]dist[\\\\/]shared[\\\\/](terminal[\\\\/]output|errors|version|mail-names|key-file-missing)\\.js',
    // Not the modules' manifests and commands (COMMANDS below), nor what only they use (the terminal
    // helpers, the secret box with node:crypto): those load with the first module command.
    '[\\\\/]dist[\\\\/]modules[\\\\/](command-types|module-types)\\.js',
    '[\\\\/]dist[\\\\/]config[\\\\/]settings-error\\.js',
    '[\\\\/]dist[\\\\/]app[\\\\/](commands|cli-runner|module-list)\\.js',
  ].join('|'),
);

// Every module's manifest and command definitions: one chunk, loaded by a module's command (and by
// serve, which needs every manifest), not by `mailsvc --help` or the program's own commands.
const COMMANDS = /[\\/]dist[\\/]modules[\\/]([^\\/]+[\\/](commands|module)|accounts[\\/]quota)\.js/;

// What every command that opens the service needs (the settings, the infrastructure, the database layer
// with Kysely, the module registry): one chunk instead of about 25 small ones. Each file Node's ESM loader
// resolves, reads and links costs time of its own: `domains list` went from 100.5 to 89.7 ms with it.
const RUNTIME = /[\\/]dist[\\/](config[\\/][^\\/]+|infra[\\/][^\\/]+|db[\\/](database|migrate|dialect|db-errors|[a-z-]+-adapter)|app[\\/](modules|schema))\.js$/;

export default defineConfig({
  input: { mailsvc: 'dist/cli/bin.js' },
  // The entry has a #! line: executable, so `npx mailsvc` and a bin link run it directly.
  plugins: [{ name: 'executable-entry', writeBundle: () => chmodSync(`${OUT}/mailsvc.js`, 0o755) }],
  platform: 'node',
  external: [/^node:/, 'better-sqlite3', '@node-rs/argon2', 'pg', 'pg-native', 'mysql2', 'ioredis', 'pino', 'fastify', /^@fastify\//],
  output: {
    dir: OUT,
    format: 'esm',
    entryFileNames: '[name].js',
    chunkFileNames: 'chunks/[name]-[hash].js',
    sourcemap: true,
    // What every start needs (commander, the program, light shared helpers) in one chunk; the
    // modules' manifests and commands in another, loaded when a module's command runs (the command
    // index, src/cli/command-index.ts, says which top-level commands are whose); each module's work
    // in chunks of its own, loaded when a command uses it.
    advancedChunks: {
      groups: [
        { name: 'startup', test: STARTUP, priority: 10 },
        { name: 'commands', test: COMMANDS, priority: 9 },
        { name: 'runtime', test: RUNTIME, priority: 8 },
      ],
    },
  },
});
