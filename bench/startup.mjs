// Start-up of the CLI (npm run bench, after run.mjs): `mailsvc --help` and
// `mailsvc domains list --json` on SQLite with 100 domains, next to `node -e 0`,
// interleaved in one run. Targets (issue 26): --help at most 1.5x node -e 0, domains list at
// most 2x (medians of wall time). Writes var/bench/startup.json.
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { median, percentile, round, table } from './lib/stats.mjs';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const CLI = join(ROOT, 'dist/bundle/mailsvc.js');
const RUNS = Number(process.env.BENCH_STARTUP_RUNS ?? 30);
const WARMUP = 3;

const dataDir = mkdtempSync(join(tmpdir(), 'mailsvc-startup-'));
const env = { PATH: process.env.PATH ?? '/usr/bin:/bin', MAILSVC_DATA_DIR: dataDir };

function run(args) {
  const t0 = performance.now();
  const r = spawnSync(process.execPath, args, { env, encoding: 'utf8', cwd: dataDir });
  const ms = performance.now() - t0;
  if (r.status !== 0) throw new Error(`${args.join(' ')} exited ${r.status}: ${r.stderr}`);
  return { ms, stdout: r.stdout };
}

try {
  run([CLI, 'db', 'migrate']);
  // 100 domains through the CLI itself, in one process per 10 (the CLI takes one name per call).
  for (let i = 0; i < 100; i++) run([CLI, 'add', 'domain', `d${String(i).padStart(3, '0')}.example.org`]);
  const listed = JSON.parse(run([CLI, 'domains', 'list', '--json', '--limit', '100']).stdout);
  if (listed.total !== 100) throw new Error(`expected 100 domains, found ${listed.total}`);

  const cases = {
    'node -e 0': ['-e', '0'],
    'mailsvc --help': [CLI, '--help'],
    'mailsvc domains list --json (100 domains)': [CLI, 'domains', 'list', '--json', '--limit', '100'],
  };
  const samples = Object.fromEntries(Object.keys(cases).map((k) => [k, []]));
  for (let i = 0; i < WARMUP + RUNS; i++) {
    for (const [name, args] of Object.entries(cases)) {
      const { ms } = run(args);
      if (i >= WARMUP) samples[name].push(ms);
    }
  }
  const base = median(samples['node -e 0']);
  const rows = [['command', 'p50 ms', 'p90 ms', 'ratio to node -e 0', 'target']];
  const result = {};
  for (const [name, s] of Object.entries(samples)) {
    const ratio = median(s) / base;
    const target = name.startsWith('mailsvc --help') ? 1.5 : name.startsWith('mailsvc domains') ? 2 : null;
    result[name] = { p50: round(median(s)), p90: round(percentile(s, 90)), ratio: round(ratio), target, samplesMs: s.map((x) => round(x)) };
    rows.push([name, round(median(s)), round(percentile(s, 90)), round(ratio), target === null ? '' : `<= ${target} ${ratio <= target ? 'PASS' : 'MISS'}`]);
  }
  console.log(`\nCLI start-up, ${RUNS} interleaved runs each (wall time, spawn to exit)\n`);
  console.log(table(rows));
  mkdirSync(join(ROOT, 'var', 'bench'), { recursive: true });
  writeFileSync(join(ROOT, 'var', 'bench', 'startup.json'), JSON.stringify({ runs: RUNS, node: process.version, result }, null, 2));
} finally {
  rmSync(dataDir, { recursive: true, force: true });
}
