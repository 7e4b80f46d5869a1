// Stats benchmark (part of npm run bench; alone: npm run build && npx tsc -p tsconfig.bench.json && node bench/stats-bench.mjs).
//
// 1. `mailsvc stats collect` (the built CLI, a fresh SQLite database) next to `pflogsumm` on the same
//    synthetic Postfix log, in one run, at two sizes (STATS_BENCH_BYTES, default 1 GiB, and an eighth of
//    it): wall time and peak RSS (GNU time's %M). Targets: pflogsumm time / collect time at least 5 at
//    the big size; collect's peak RSS at the big size at most 1.2 x its peak at the small one (flat).
//    The log is generated from real line shapes (test/fixtures/stats/postfix-real.log, written by the
//    test Postfix for mail sent with swaks): each message gets a new queue id, time and mailbox.
// 2. `stats summary` over a year of rows for 1,000 mailboxes (STATS_BENCH_ROWS, default 1,000,000, in
//    SQLite): p50/p99 of the service call for a 30-day range, a whole year, and one mailbox's year.
// Exit 1 only when the bench itself failed; MISS is reported, not fatal.
import { Buffer } from 'node:buffer';
import { spawn } from 'node:child_process';
import { createWriteStream, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import Database from 'better-sqlite3';
import { createDb } from '../var/bench-build/src/db/database.js';
import { migrateToLatest } from '../var/bench-build/src/app/schema.js';
import { StatsRepository } from '../var/bench-build/src/modules/stats/stats.repository.js';
import { StatsService } from '../var/bench-build/src/modules/stats/stats.service.js';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const CLI = join(ROOT, 'dist/bundle/mailsvc.js');
const BIG = Number(process.env.STATS_BENCH_BYTES ?? 1024 ** 3);
const ROWS = Number(process.env.STATS_BENCH_ROWS ?? 1_000_000);
const MAILBOXES = 1000;
const log = (s) => process.stderr.write(`${s}\n`);
const load = () => loadavg().map((x) => x.toFixed(2)).join(' ');
const pct = (xs, p) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(xs.length * p))];

/** Runs argv under GNU time, stdout to /dev/null; wall ms and peak RSS in KiB. */
function measure(argv, env) {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const child = spawn('/usr/bin/time', ['-f', '%M', ...argv], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let err = '';
    let out = '';
    child.stderr.setEncoding('utf8').on('data', (d) => (err += d));
    // The head is kept: collect's JSON, pflogsumm's grand totals and per-day table come first.
    child.stdout.setEncoding('utf8').on('data', (d) => (out = out.length < 200_000 ? out + d : out));
    child.on('error', reject);
    child.on('close', (code) => {
      const kib = Number(err.trim().split('\n').at(-1));
      if (code !== 0 || !Number.isFinite(kib)) reject(new Error(`${argv.join(' ')} exited ${code}: ${err.slice(-500)}`));
      else resolve({ ms: performance.now() - started, kib, out });
    });
  });
}

/**
 * The real log's lines grouped by queue id (one group per message, in order), as templates: the
 * timestamp, queue id and local mailboxes become placeholders.
 */
function templates() {
  const text = readFileSync(join(ROOT, 'test/fixtures/stats/postfix-real.log'), 'utf8');
  const groups = new Map();
  const syslog = /^\S+ +\d+ [\d:]+ \S+ (postfix-test-\d+)\//m.exec(text)?.[1];
  for (const line of text.split('\n')) {
    const m = /^(\w{3} +\d+ [\d:]+) (.*?: )([0-9A-F]{8,}): (.*)$/.exec(line);
    if (!m) continue;
    const body = `${m[2]}@QID@: ${m[4]}`.replaceAll(syslog, 'postfix').replaceAll('alice@example.org', '@A@').replaceAll('bob@example.org', '@B@');
    if (!groups.has(m[3])) groups.set(m[3], []);
    groups.get(m[3]).push(body);
  }
  // The connect/disconnect lines around each message, as busy logs have them.
  const noise = text.split('\n').filter((l) => / (connect from|disconnect from) /.test(l)).map((l) => l.replace(/^\w{3} +\d+ [\d:]+ /, '').replaceAll(syslog, 'postfix'));
  return { messages: [...groups.values()], noise };
}

/** Writes about `bytes` of log; returns the path. Bounded: large buffered writes, no per-line syscalls. */
async function generate(dir, bytes) {
  const path = join(dir, 'mail.log');
  const out = createWriteStream(path, { highWaterMark: 1 << 22 });
  const { messages, noise } = templates();
  const MON = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];
  let written = 0;
  let n = 0;
  let t = Date.UTC(2026, 0, 1);
  const started = performance.now();
  while (written < bytes) {
    let chunk = '';
    for (let k = 0; k < 2000; k++, n++) {
      t += 1000;
      const d = new Date(t);
      const stamp = `${MON[d.getMonth()]} ${String(d.getDate()).padStart(2, ' ')} ${d.toTimeString().slice(0, 8)} `;
      const qid = (0x1000000000 + n).toString(16).toUpperCase();
      const a = `user${n % MAILBOXES}@example.org`;
      const b = `user${(n * 7 + 3) % MAILBOXES}@example.org`;
      for (const l of noise.slice(0, 2)) chunk += stamp + l + '\n';
      for (const l of messages[n % messages.length]) chunk += stamp + l.replace('@QID@', qid).replaceAll('@A@', a).replaceAll('@B@', b) + '\n';
    }
    written += Buffer.byteLength(chunk);
    if (!out.write(chunk)) await new Promise((r) => out.once('drain', r));
  }
  await new Promise((r) => out.end(r));
  log(`  generated ${(statSync(path).size / 1024 ** 2).toFixed(0)} MiB (${n} messages) in ${((performance.now() - started) / 1000).toFixed(1)} s`);
  return path;
}

async function collectVsPflogsumm(bytes) {
  const dir = mkdtempSync(join(tmpdir(), 'mailsvc-stats-bench-'));
  try {
    const path = await generate(dir, bytes);
    const env = { PATH: process.env.PATH, MAILSVC_DATA_DIR: dir, MAILSVC_MAIL_LOG: path };
    await measure([process.execPath, CLI, 'db', 'migrate'], env);
    // The machine may be shared: the load average before each run goes with the figures.
    const loadCollect = load();
    const collect = await measure([process.execPath, CLI, 'stats', 'collect', '--json'], env);
    const loadPflogsumm = load();
    const pflogsumm = await measure(['pflogsumm', path], env);
    log(`  load average before collect: ${loadCollect}; before pflogsumm: ${loadPflogsumm}; after: ${load()}`);
    const rows = JSON.parse(collect.out).rows_added;
    // pflogsumm shortens big grand totals in units of 1024 ("1259k" for 1,290,000): its per-day table (printed when
    // the log spans days) has the exact counts.
    const table = /Per-Day Traffic Summary\n-+\n.*\n\s*-+\n([\s\S]*?)\n\n/.exec(pflogsumm.out)?.[1];
    const shown = /^\s*(\d+)([km]?)\s+received$/m.exec(pflogsumm.out);
    const received = table !== undefined
      ? table.split('\n').reduce((n, l) => n + Number(/^\s*\w{3}\s+\d+ \d{4}\s+(\d+)/.exec(l)?.[1] ?? NaN), 0)
      : shown ? Number(shown[1]) * (shown[2] === 'k' ? 1024 : shown[2] === 'm' ? 1024 ** 2 : 1) : NaN;
    log(`  collect stored ${rows} rows; pflogsumm counted ${received} messages received${table !== undefined ? ' (its per-day table)' : ''}: ${rows === received ? 'equal' : 'DIFFERENT'}`);
    return { bytes: statSync(path).size, collect, pflogsumm, loadCollect, loadPflogsumm, rows, received };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

async function summaryLatency() {
  const dir = mkdtempSync(join(tmpdir(), 'mailsvc-stats-sum-'));
  const url = `sqlite://${join(dir, 'stats.db')}`;
  const db = createDb(url);
  try {
    await migrateToLatest(db);
    const raw = new Database(join(dir, 'stats.db'));
    const insert = raw.prepare('insert into stats_messages (msg_key, mailbox, direction, size, at) values (?, ?, ?, ?, ?)');
    const year = 365 * 86_400_000;
    const t0 = Date.UTC(2026, 0, 1);
    const started = performance.now();
    raw.transaction(() => {
      for (let i = 0; i < ROWS; i++) insert.run(`k${i}`, `user${i % MAILBOXES}@example.org`, ['inbound', 'outbound', 'local'][i % 3], 1000 + (i % 50_000), t0 + Math.floor((i / ROWS) * year));
    })();
    raw.close();
    log(`  ${ROWS} rows for ${MAILBOXES} mailboxes over a year inserted in ${((performance.now() - started) / 1000).toFixed(1)} s`);
    const service = new StatsService(new StatsRepository(db, 'sqlite'), { now: () => t0 + year }, '/nonexistent', () => 365);
    const cases = [
      ['summary, last 30 days', { from: '2026-12-02', to: '2027-01-01' }],
      ['summary, whole year', { from: '2026-01-01', to: '2027-01-01' }],
      ['summary, one mailbox, whole year', { from: '2026-01-01', to: '2027-01-01', mailbox: 'user500@example.org' }],
    ];
    const out = [];
    for (const [name, range] of cases) {
      const times = [];
      for (let i = 0; i < 50; i++) {
        const s = performance.now();
        await service.summary(range);
        times.push(performance.now() - s);
      }
      out.push({ name, p50: pct(times, 0.5), p99: pct(times, 0.99) });
    }
    return out;
  } finally {
    await db.destroy();
    rmSync(dir, { recursive: true, force: true });
  }
}

try {
  log(`stats bench: collect vs pflogsumm at ${(BIG / 8 / 1024 ** 2).toFixed(0)} MiB and ${(BIG / 1024 ** 2).toFixed(0)} MiB`);
  const small = await collectVsPflogsumm(Math.floor(BIG / 8));
  const big = await collectVsPflogsumm(BIG);
  const ratio = big.pflogsumm.ms / big.collect.ms;
  const rss = big.collect.kib / small.collect.kib;
  const mib = (b) => `${(b / 1024 ** 2).toFixed(0)} MiB`;
  console.log('\n## stats collect vs pflogsumm (same file, one run)\n');
  console.log('| log | collect s | collect peak RSS | pflogsumm s | pflogsumm peak RSS | pflogsumm / collect | load average (1/5/15 min) before collect; before pflogsumm |');
  console.log('| --- | --- | --- | --- | --- | --- | --- |');
  for (const r of [small, big]) {
    console.log(`| ${mib(r.bytes)} | ${(r.collect.ms / 1000).toFixed(1)} | ${(r.collect.kib / 1024).toFixed(0)} MiB | ${(r.pflogsumm.ms / 1000).toFixed(1)} | ${(r.pflogsumm.kib / 1024).toFixed(0)} MiB | ${(r.pflogsumm.ms / r.collect.ms).toFixed(2)} | ${r.loadCollect}; ${r.loadPflogsumm} |`);
  }
  for (const r of [small, big]) console.log(`cross-check at ${mib(r.bytes)}: collect stored ${r.rows} rows, pflogsumm counted ${r.received} messages received: ${r.rows === r.received ? 'equal' : 'DIFFERENT'}`);
  console.log(`\nspeed: ${ratio.toFixed(2)}x pflogsumm (target >= 5): ${ratio >= 5 ? 'OK' : 'MISS'}`);
  console.log(`memory: collect peak RSS at ${mib(big.bytes)} is ${rss.toFixed(2)}x its peak at ${mib(small.bytes)} (target <= 1.2, flat): ${rss <= 1.2 ? 'OK' : 'MISS'}`);
  log('stats bench: stats summary latency');
  const lat = await summaryLatency();
  console.log(`\n## stats summary over ${ROWS} rows, ${MAILBOXES} mailboxes, one year (SQLite, 50 calls each)\n`);
  console.log('| query | p50 ms | p99 ms |');
  console.log('| --- | --- | --- |');
  for (const l of lat) console.log(`| ${l.name} | ${l.p50.toFixed(1)} | ${l.p99.toFixed(1)} |`);
} catch (err) {
  log(`stats bench failed: ${err instanceof Error ? err.stack : String(err)}`);
  process.exit(1);
}
