// `npm run docs:generate`: writes the generated sections of README.md and
// docs/audit.md (the endpoint and command tables, the audited actions) from
// the module list's routes and commands (src/doc-tables/). `--check`: writes
// nothing, exits 1 naming the files that are stale. The TypeScript sources are
// run through Vite's module runner, so no build is needed first.
import { writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createServer } from 'vite';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const check = process.argv.includes('--check');
const server = await createServer({
  configFile: false,
  root,
  logLevel: 'error',
  appType: 'custom',
  server: { middlewareMode: true, hmr: false, ws: false, watch: null },
  optimizeDeps: { noDiscovery: true, include: [] },
});
let stale = [];
try {
  const { renderDocs } = await server.ssrLoadModule('/src/doc-tables/generate.ts');
  for (const [file, { before, after }] of await renderDocs(root)) {
    if (before === after) continue;
    stale.push(file);
    if (!check) writeFileSync(join(root, file), after);
  }
} finally {
  await server.close();
}
if (stale.length === 0) console.log('README.md and docs/audit.md are up to date.');
else if (check) {
  console.error(`stale: ${stale.join(', ')}: run npm run docs:generate`);
  process.exitCode = 1;
} else console.log(`written: ${stale.join(', ')}`);
