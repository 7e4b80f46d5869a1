// `npm run build`: writes the command index (src/cli/command-index.ts) next to the bundle,
// from the full program of this very build (tsc's output in dist/). Usage: node scripts/command-index.mjs <bundle dir>
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';

const out = process.argv[2];
if (!out) throw new Error('usage: node scripts/command-index.mjs <bundle dir>');
const dist = new URL('../dist/', import.meta.url);
const { buildProgram } = await import(new URL('cli/program.js', dist).href);
const { loadModuleList } = await import(new URL('app/module-list.js', dist).href);
const { commandIndexOf } = await import(new URL('cli/command-index.js', dist).href);
const owners = new Map();
const program = await buildProgram({ owners });
writeFileSync(join(out, 'command-index.json'), `${JSON.stringify(commandIndexOf(program, owners, await loadModuleList()), null, 1)}\n`);
