// Queue benchmark (part of npm run bench; alone: npm run build && npx tsc -p tsconfig.bench.json && node bench/queue-bench.mjs).
//
// A real Postfix from a temp configuration (test/helpers/postfix-queue.ts: every message waits in the
// deferred queue, nothing is delivered) is filled to 2,000 and then 20,000 messages. At each size, in
// one run: `postqueue -j > /dev/null` and `mailsvc queue list --json` (the built CLI, default page:
// it reads and filters the whole queue, prints 50), each REPEAT times, alternating, with wall time and
// peak RSS (GNU time's %M) per run. Targets (issue 26): time ratio (median mailsvc / median postqueue)
// at most 1.5 at 2,000 and at most 1.1 at 20,000; mailsvc's peak RSS at 20,000 not above 1.2 × its
// peak at 2,000 (flat with the queue).
// Exit 1 only when the bench itself failed; MISS is reported, not fatal.
import { execFile, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { startQueuePostfix } from '../var/bench-build/test/helpers/postfix-queue.js';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const CLI = join(ROOT, 'dist/bundle/mailsvc.js');
const SIZES = (process.env.QUEUE_BENCH_SIZES ?? '2000,20000').split(',').map(Number);
const REPEAT = Number(process.env.QUEUE_BENCH_REPEAT ?? 5);
const SESSIONS = 4;
const execFileP = promisify(execFile);
const log = (s) => process.stderr.write(`${s}\n`);
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
/** Time ratio targets by queue size (issue 26): start-up dominates at 2,000, the scan at 20,000. */
const RATIO_TARGETS = new Map([
  [2000, 1.5],
  [20000, 1.1],
]);

/** Runs argv under GNU time with stdout to /dev/null; resolves with wall ms and peak RSS in KiB. */
function measure(argv, env) {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const child = spawn('/usr/bin/time', ['-f', '%M', ...argv], { env, stdio: ['ignore', 'ignore', 'pipe'] });
    let err = '';
    child.stderr.setEncoding('utf8').on('data', (d) => (err += d));
    child.on('error', reject);
    child.on('close', (code) => {
      const ms = performance.now() - started;
      const kib = Number(err.trim().split('\n').at(-1));
      if (code !== 0 || !Number.isFinite(kib)) reject(new Error(`${argv.join(' ')} exited ${code}: ${err.slice(-500)}`));
      else resolve({ ms, kib });
    });
  });
}

async function fill(pf, target) {
  const have = (await pf.queue()).length;
  const need = target - have;
  const per = Math.ceil(need / SESSIONS);
  log(`filling the queue from ${have} to ${target} messages (${SESSIONS} SMTP sessions)…`);
  const started = performance.now();
  await Promise.all(
    Array.from({ length: SESSIONS }, (_, s) => {
      const n = Math.max(0, Math.min(per, need - s * per));
      const msgs = Array.from({ length: n }, (_, i) => ({ from: `sender${(s * per + i) % 97}@bench.test`, to: [`rcpt${i % 13}@dest${i % 7}.test`] }));
      return pf.send(msgs);
    }),
  );
  await pf.settle(target, 600_000);
  log(`  ${target} messages queued in ${((performance.now() - started) / 1000).toFixed(1)} s`);
}

async function main() {
  if (process.getuid?.() !== 0) throw new Error('the queue bench needs root (Postfix, postsuper)');
  const dataDir = mkdtempSync(join(tmpdir(), 'mailsvc-queue-bench-'));
  const pf = await startQueuePostfix();
  const rows = [];
  try {
    const env = { PATH: process.env.PATH, MAILSVC_DATA_DIR: dataDir, MAILSVC_HELPER: 'direct', MAILSVC_POSTFIX_CONFIG_DIR: pf.configDir };
    for (const size of SIZES) {
      await fill(pf, size);
      const check = JSON.parse((await execFileP(process.execPath, [CLI, 'queue', 'list', '--json', '--limit', '1'], { env })).stdout);
      if (check.length !== 1) throw new Error('mailsvc queue list --json printed no entry');
      const pq = [];
      const ms = [];
      for (let i = 0; i < REPEAT; i++) {
        pq.push(await measure(['postqueue', '-c', pf.configDir, '-j'], env));
        ms.push(await measure([process.execPath, CLI, 'queue', 'list', '--json'], env));
      }
      const row = {
        size,
        postqueue_ms: median(pq.map((r) => r.ms)),
        mailsvc_ms: median(ms.map((r) => r.ms)),
        postqueue_rss_kib: Math.max(...pq.map((r) => r.kib)),
        mailsvc_rss_kib: Math.max(...ms.map((r) => r.kib)),
        runs: { postqueue: pq, mailsvc: ms },
      };
      row.ratio = row.mailsvc_ms / row.postqueue_ms;
      rows.push(row);
      log(`  ${size}: postqueue -j ${row.postqueue_ms.toFixed(0)} ms, mailsvc queue list --json ${row.mailsvc_ms.toFixed(0)} ms (×${row.ratio.toFixed(2)}), peak RSS ${row.mailsvc_rss_kib} KiB`);
    }
  } finally {
    await pf.stop();
    rmSync(dataDir, { recursive: true, force: true });
  }
  const small = rows[0];
  const large = rows.at(-1);
  const targeted = rows.filter((r) => RATIO_TARGETS.has(r.size));
  for (const r of targeted) r.ratioOk = r.ratio <= RATIO_TARGETS.get(r.size);
  const ratioOk = targeted.every((r) => r.ratioOk);
  const rssOk = large.mailsvc_rss_kib <= small.mailsvc_rss_kib * 1.2;
  const lines = [
    'queue size | postqueue -j > /dev/null | mailsvc queue list --json | ratio | target | mailsvc peak RSS | postqueue peak RSS',
    ...rows.map((r) => {
      const target = RATIO_TARGETS.has(r.size) ? `≤ ${RATIO_TARGETS.get(r.size)} ${r.ratioOk ? 'PASS' : 'MISS'}` : 'info';
      return `${r.size} | ${r.postqueue_ms.toFixed(0)} ms | ${r.mailsvc_ms.toFixed(0)} ms | ${r.ratio.toFixed(2)} | ${target} | ${(r.mailsvc_rss_kib / 1024).toFixed(1)} MiB | ${(r.postqueue_rss_kib / 1024).toFixed(1)} MiB`;
    }),
    ...targeted.map((r) => `time ratio at ${r.size}: ${r.ratio.toFixed(2)} (target ≤ ${RATIO_TARGETS.get(r.size)}) ${r.ratioOk ? 'PASS' : 'MISS'}`),
    `peak RSS ${small.size} → ${large.size}: ${(small.mailsvc_rss_kib / 1024).toFixed(1)} → ${(large.mailsvc_rss_kib / 1024).toFixed(1)} MiB (target: flat, ≤ 1.2×) ${rssOk ? 'PASS' : 'MISS'}`,
  ];
  process.stdout.write(`${lines.join('\n')}\n`);
  mkdirSync(join(ROOT, 'var/bench'), { recursive: true });
  writeFileSync(join(ROOT, 'var/bench/queue-latest.json'), JSON.stringify({ repeat: REPEAT, rows, ratioOk, rssOk }, null, 2));
}

main().catch((err) => {
  process.stderr.write(`queue bench failed: ${err instanceof Error ? err.stack : String(err)}\n`);
  process.exit(1);
});
