// Idle memory of `mailsvc serve` as it ships (npm run bench, after run.mjs):
// the bundled command (dist/bundle/mailsvc.js serve) started with the
// NODE_OPTIONS of deploy/systemd/mailsvc.service, SQLite in a temp data dir,
// next to a bare Fastify app (serve-bare.mjs). Each is started, answers 20
// requests, idles 2 s, and its RSS is read from /proc; ROUNDS fresh starts of
// each, interleaved, and the median reported. Targets (issue 26): mailsvc at
// most 90 MiB and at most 1.4 x bare Fastify. Writes var/bench/idle-rss.json.
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { startChild } from './lib/child.mjs';
import { median, round, table } from './lib/stats.mjs';

const HERE = dirname(fileURLToPath(import.meta.url));
const ROOT = join(HERE, '..');
const CLI = join(ROOT, 'dist/bundle/mailsvc.js');
const ROUNDS = Number(process.env.BENCH_RSS_ROUNDS ?? 3);
const IDLE_MS = 2000;
const TARGET_MIB = 90;
const TARGET_RATIO = 1.4;

/** NODE_OPTIONS as the service's unit sets them (the figure is the shipped service's, flags and all). */
function unitNodeOptions() {
  const unit = readFileSync(join(ROOT, 'deploy/systemd/mailsvc.service'), 'utf8');
  return /^Environment=NODE_OPTIONS=(.*)$/m.exec(unit)?.[1]?.trim() ?? '';
}

function freePort() {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

const rssOf = (pid) => Number(/^VmRSS:\s+(\d+)\s+kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1]) / 1024;

async function get(url) {
  const res = await globalThis.fetch(url);
  await res.arrayBuffer();
  if (res.status !== 200) throw new Error(`${url}: ${res.status}`);
}

async function shippedServe(nodeOptions) {
  const dataDir = mkdtempSync(join(tmpdir(), 'mailsvc-rss-'));
  const [apiPort, policyPort] = [await freePort(), await freePort()];
  const env = {
    PATH: process.env.PATH ?? '/usr/bin:/bin',
    NODE_OPTIONS: nodeOptions,
    MAILSVC_DATA_DIR: dataDir,
    MAILSVC_ADMIN_USERNAME: 'admin',
    MAILSVC_ADMIN_PASSWORD: 'bench-password-not-a-secret-1',
    MAILSVC_MFA_REQUIRED: 'no',
    MAILSVC_API_HOST: '127.0.0.1',
    MAILSVC_API_PORT: String(apiPort),
    MAILSVC_POLICY_LISTEN: `127.0.0.1:${policyPort}`,
  };
  const child = spawn(process.execPath, [CLI, 'serve'], { env, cwd: dataDir, stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (d) => (stderr += d));
  const url = `http://127.0.0.1:${apiPort}/health`;
  try {
    for (let i = 0; ; i++) {
      if (child.exitCode !== null) throw new Error(`mailsvc serve exited ${child.exitCode}: ${stderr.slice(-500)}`);
      try {
        await get(url);
        break;
      } catch (err) {
        if (i > 600) throw new Error(`mailsvc serve did not answer ${url} within 60 s: ${err.message}`);
        await sleep(100);
      }
    }
    for (let i = 0; i < 20; i++) await get(url);
    await sleep(IDLE_MS);
    return rssOf(child.pid);
  } finally {
    child.kill('SIGKILL');
    rmSync(dataDir, { recursive: true, force: true });
  }
}

async function bareFastify() {
  const bare = await startChild(join(HERE, 'serve-bare.mjs'));
  try {
    for (let i = 0; i < 20; i++) await get(`${bare.url}/bare`);
    await sleep(IDLE_MS);
    return (await bare.rssMiB()).mib;
  } finally {
    await bare.stop();
  }
}

const nodeOptions = unitNodeOptions();
const samples = { mailsvc: [], bare: [] };
for (let i = 0; i < ROUNDS; i++) {
  process.stderr.write(`idle RSS: round ${i + 1}/${ROUNDS}\n`);
  samples.mailsvc.push(await shippedServe(nodeOptions));
  samples.bare.push(await bareFastify());
}
const m = median(samples.mailsvc);
const b = median(samples.bare);
const ratio = m / b;
const verdict = (ok) => (ok ? 'PASS' : 'MISS');
console.log(`\nIdle RSS, ${ROUNDS} fresh starts each, median (after start-up, 20 requests and ${IDLE_MS / 1000} s idle; /proc VmRSS)\n`);
console.log(
  table([
    ['server', 'MiB', 'all starts', 'target', 'result'],
    [`mailsvc serve (bundle, NODE_OPTIONS=${nodeOptions || '(none)'})`, round(m, 1), samples.mailsvc.map((x) => round(x, 1)).join(' / '), `<= ${TARGET_MIB}`, verdict(m <= TARGET_MIB)],
    ['bare Fastify', round(b, 1), samples.bare.map((x) => round(x, 1)).join(' / '), '', ''],
    ['ratio mailsvc / bare', round(ratio, 3), '', `<= ${TARGET_RATIO}`, verdict(ratio <= TARGET_RATIO)],
  ]),
);
mkdirSync(join(ROOT, 'var', 'bench'), { recursive: true });
writeFileSync(join(ROOT, 'var', 'bench', 'idle-rss.json'), JSON.stringify({ nodeOptions, rounds: ROUNDS, samplesMiB: samples, medianMiB: { mailsvc: m, bare: b }, ratio }, null, 2));
