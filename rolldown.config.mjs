// The shipped `mailsvc` command: tsc's output for src/cli/bin.ts bundled into a
// few files (one per lazily loaded part), because Node loads one large file far
// faster than Kysely's and commander's hundreds of small ones: the CLI's
// start-up is most of a short command's time. Packages with native code or
// files of their own loaded at run time stay in node_modules.
import { defineConfig } from 'rolldown';

export default defineConfig({
  input: { mailsvc: 'dist/cli/bin.js' },
  platform: 'node',
  external: [/^node:/, 'better-sqlite3', '@node-rs/argon2', 'pg', 'pg-native', 'mysql2', 'ioredis', 'pino', 'fastify', /^@fastify\//],
  output: { dir: 'dist/bundle', format: 'esm', entryFileNames: '[name].js', chunkFileNames: 'chunks/[name]-[hash].js', sourcemap: true },
});
