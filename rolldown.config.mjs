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
    '[\\\\/]dist[\\\\/]cli[\\\\/](bin|program|output|usage-errors|audit-hook|commands[\\\\/](db|secrets|helper))\\.js',
    '[\\\\/]dist[\\\\/]shared[\\\\/](terminal[\\\\/][^\\\\/]+|errors|version|send-rate|mail-names|paging|secret-key-file|secret-box|fs-atomic|crypto)\\.js',
    '[\\\\/]dist[\\\\/]modules[\\\\/]([^\\\\/]+[\\\\/](commands|module)|command-types|module-types|route-types|accounts[\\\\/]quota)\\.js',
    '[\\\\/]dist[\\\\/]helper[\\\\/]actions\\.js',
    '[\\\\/]dist[\\\\/]config[\\\\/]settings-error\\.js',
    '[\\\\/]dist[\\\\/]app[\\\\/](commands|cli-runner|module-list)\\.js',
  ].join('|'),
);

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
    // What every start needs (commander, the command definitions, light shared helpers) in one
    // chunk; each module's work stays in chunks of its own, loaded when a command runs.
    advancedChunks: { groups: [{ name: 'startup', test: STARTUP, priority: 10 }] },
  },
});
