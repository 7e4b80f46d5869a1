// Where a CLI command's time goes (issue 26: the profile behind a row that misses its target).
//
//   npm run build && node bench/cpu-profile.mjs [--runs N] -- <args of mailsvc…>
//   node bench/cpu-profile.mjs --node -- -e 0          # the anchor, profiled the same way
//
// Runs the shipped bundle (or bare node with --node) N times (default 10) with V8's --cpu-prof, merges
// the profiles and prints self time per run, grouped by where the code lives (a bundle chunk, a package
// under node_modules, Node's own internals by module, V8's garbage collector, native/program time),
// then the functions with the most self time. The environment is the caller's (MAILSVC_DATA_DIR etc.).
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const CLI = join(ROOT, 'dist/bundle/mailsvc.js');
const argv = process.argv.slice(2);
const sep = argv.indexOf('--');
const own = sep === -1 ? argv : argv.slice(0, sep);
const args = sep === -1 ? [] : argv.slice(sep + 1);
const runsAt = own.indexOf('--runs');
const RUNS = runsAt === -1 ? 10 : Number(own[runsAt + 1]);
const bare = own.includes('--node');
if (!Number.isInteger(RUNS) || RUNS < 1) throw new Error('--runs takes a positive whole number');

/** Where a call frame's code lives. */
function place(url, name) {
  if (name === '(garbage collector)') return 'V8 garbage collector';
  if (name === '(program)' || name === '(root)') return 'native / V8 (program)';
  if (name === '(idle)') return 'idle (waiting)';
  if (url === '') return 'native / V8 (no script)';
  if (url.startsWith('node:internal/')) return `node:internal/${url.slice('node:internal/'.length).split('/')[0]}`;
  if (url.startsWith('node:')) return url;
  const nm = url.lastIndexOf('/node_modules/');
  if (nm !== -1) {
    const rest = url.slice(nm + '/node_modules/'.length).split('/');
    return `package ${rest[0].startsWith('@') ? `${rest[0]}/${rest[1]}` : rest[0]}`;
  }
  // dist/bundle links to the version directory the build made (dist/.bundle-<time>-<pid>/), which Node reports.
  const b = /\/dist\/(?:bundle|\.bundle-[^/]+)\/(.*)$/.exec(url);
  if (b) return `bundle ${b[1]}`;
  return url.replace(/^file:\/\//, '');
}

const byPlace = new Map();
const byFn = new Map();
let wallUs = 0;
const dir = mkdtempSync(join(tmpdir(), 'mailsvc-cpu-prof-'));
try {
  for (let i = 0; i < RUNS; i++) {
    const r = spawnSync(process.execPath, ['--cpu-prof', '--cpu-prof-dir', dir, '--cpu-prof-interval', '100', ...(bare ? [] : [CLI]), ...args], { encoding: 'utf8', stdio: ['ignore', 'ignore', 'pipe'] });
    if (r.status !== 0) throw new Error(`exit ${r.status}: ${r.stderr}`);
  }
  for (const f of readdirSync(dir)) {
    const p = JSON.parse(readFileSync(join(dir, f), 'utf8'));
    wallUs += p.endTime - p.startTime;
    const nodes = new Map(p.nodes.map((n) => [n.id, n]));
    // Self time: each sample is charged to its node for the interval that follows it.
    for (let k = 0; k < p.samples.length; k++) {
      const n = nodes.get(p.samples[k]);
      const us = p.timeDeltas[k + 1] ?? 0;
      const cf = n.callFrame;
      const where = place(cf.url, cf.functionName);
      byPlace.set(where, (byPlace.get(where) ?? 0) + us);
      const fn = `${cf.functionName || '(anonymous)'} ${where}${cf.url ? `:${cf.lineNumber + 1}` : ''}`;
      byFn.set(fn, (byFn.get(fn) ?? 0) + us);
    }
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}
const ms = (us) => (us / 1000 / RUNS).toFixed(2);
const profiled = [...byPlace.values()].reduce((a, b) => a + b, 0);
console.log(`${bare ? 'node' : 'mailsvc'} ${args.join(' ')}: ${RUNS} runs, ${ms(wallUs)} ms profiled per run (from V8's profiler start to exit), self time per run:`);
for (const [k, v] of [...byPlace].sort((a, b) => b[1] - a[1]).filter(([, v]) => v / profiled >= 0.005)) console.log(`  ${ms(v).padStart(7)} ms  ${((100 * v) / profiled).toFixed(1).padStart(5)} %  ${k}`);
console.log('functions with the most self time:');
for (const [k, v] of [...byFn].sort((a, b) => b[1] - a[1]).slice(0, 15)) console.log(`  ${ms(v).padStart(7)} ms  ${k}`);
