// How long the root helper takes to learn who holds a connection (docs/helper.md, Limits), on a host
// with 2,000 more processes than usual: the old way (iproute2's ss and /proc/<pid>/fd, kept here only
// as the yardstick) against SO_PEERCRED (src/helper/peer-identity.ts, the native/peercred addon).
// A diagnosis, not part of npm run bench; as root, after npm run build:
//   npm run build && node bench/peer-identity.mjs [--processes 2000] [--rounds 3]
//
// One Unix socket server (paused connections, as the helper's) and one client process run as nobody
// (setpriv), which connects once per line it reads: so both ways do all their work (a user, not root,
// whose cgroup is read). Each round: with no extra processes, then with them, the old way 20 times and
// SO_PEERCRED 200 times, each a fresh connection identified once (its result checked: user 65534, the
// client's pid). The extra
// processes are one shell's forked subshells, each blocked on a read of a pipe from this process, so
// they all end with it. Prints ms per identification (median of the rounds) and the ratio.
import { execFile, spawn } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { readFile, readlink } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { identifyPeer } from '../dist/helper/peer-identity.js';

const { values: opt } = parseArgs({ options: { processes: { type: 'string', default: '2000' }, rounds: { type: 'string', default: '3' } } });
const EXTRA = Number(opt.processes);
const ROUNDS = Number(opt.rounds);
if (process.getuid?.() !== 0) {
  process.stderr.write('peer-identity bench: run it as root (the old way reads other processes\' /proc/<pid>/fd)\n');
  process.exit(2);
}

// ---- The old way (ss + /proc), as src/helper/peer-identity.ts and peer-ss.ts had it: the anchor only. ----
const run = (file, args) => new Promise((resolve, reject) => execFile(file, args, { maxBuffer: 64 * 1024 * 1024, timeout: 30_000 }, (err, stdout) => (err ? reject(err) : resolve(stdout))));
const socketInode = (link) => { const m = /^socket:\[(\d+)\]$/.exec(link); return m ? Number(m[1]) : null; };
function serverPeerInodes(out) {
  const map = new Map();
  for (const line of out.split('\n')) {
    const t = line.trim().split(/\s+/);
    if (t.length < 8 || t[0] !== 'u_str' || t[t.length - 2] !== '*') continue;
    map.set(Number(t[t.length - 3]), Number(t[t.length - 1]));
  }
  return map;
}
function holderCandidates(out, inode) {
  const word = new RegExp(`(?:^|\\s)${inode}(?:\\s|$)`);
  const found = [];
  for (const line of out.split('\n')) if (word.test(line)) for (const m of line.matchAll(/pid=(\d{1,10}),fd=(\d{1,10})/g)) found.push({ pid: Number(m[1]), fd: Number(m[2]) });
  return found;
}
async function identifyOld(socket, socketPath) {
  const own = socketInode(await readlink(`/proc/self/fd/${socket._handle.fd}`));
  const peerInode = serverPeerInodes(await run('ss', ['-xnH', 'src', socketPath])).get(own);
  if (peerInode === undefined) return { kind: 'unknown' };
  for (const c of holderCandidates(await run('ss', ['-xpnH']), peerInode)) {
    let link;
    try { link = await readlink(`/proc/${c.pid}/fd/${c.fd}`); } catch { continue; }
    if (socketInode(link) !== peerInode) continue;
    const uid = Number(/^Uid:\s+(\d+)\s/m.exec(await readFile(`/proc/${c.pid}/status`, 'utf8'))?.[1]);
    await readFile(`/proc/${c.pid}/cgroup`, 'utf8');
    return { kind: uid === 0 ? 'root' : 'user', pid: c.pid, uid };
  }
  return { kind: 'unknown' };
}

// ---- The bench ----
const dir = mkdtempSync(join(tmpdir(), 'mailsvc-peer-bench-'));
const path = join(dir, 'peer.sock');
const waiters = [];
const server = createServer({ pauseOnConnect: true }, (s) => waiters.shift()?.(s));
await new Promise((resolve) => server.listen(path, resolve));
chmodSync(dir, 0o755);
chmodSync(path, 0o666);
const NOBODY = 65534;
const CLIENT = "const net = require('net'); require('readline').createInterface({ input: process.stdin }).on('line', () => net.createConnection(process.argv[1]).on('error', () => {}));";
const client = spawn('setpriv', [`--reuid=${NOBODY}`, `--regid=${NOBODY}`, '--clear-groups', process.execPath, '-e', CLIENT, path], { stdio: ['pipe', 'ignore', 'inherit'] });
let sleepers;
const cleanup = () => {
  client.kill('SIGKILL');
  sleepers?.stdin.end();
  try { if (sleepers?.pid) process.kill(-sleepers.pid, 'SIGKILL'); } catch { /* gone */ }
  server.close();
  rmSync(dir, { recursive: true, force: true });
};
process.on('SIGINT', () => { cleanup(); process.exit(130); });

async function startExtra(count) {
  const sh = spawn('sh', ['-c', `exec 3<&0; i=0; while [ "$i" -lt ${count} ]; do read _ <&3 & i=$((i+1)); done; echo ready; wait`], { detached: true, stdio: ['pipe', 'pipe', 'inherit'] });
  await new Promise((resolve, reject) => {
    let out = '';
    sh.stdout.setEncoding('utf8').on('data', (d) => { out += d; if (out.includes('ready\n')) resolve(); });
    sh.once('exit', () => reject(new Error('the shell forking the extra processes exited early')));
  });
  return sh;
}

/** ms per identification over n fresh connections. */
async function measure(identify, n) {
  let total = 0;
  for (let i = 0; i < n; i += 1) {
    const got = new Promise((resolve) => waiters.push(resolve));
    client.stdin.write('\n');
    const socket = await got;
    const t = performance.now();
    const peer = await identify(socket);
    total += performance.now() - t;
    if (peer.kind !== 'user' || peer.uid !== NOBODY || peer.pid !== client.pid) throw new Error(`identified as ${JSON.stringify(peer)}, not user ${NOBODY} with pid ${client.pid}`);
    socket.destroy();
  }
  return total / n;
}

const methods = [
  ['ss + /proc (old)', (s) => identifyOld(s, path), 20],
  ['SO_PEERCRED', (s) => identifyPeer(s, { serviceUnit: 'mailsvc.service' }), 200],
];
const results = {};
const record = (key, ms) => (results[key] ??= []).push(ms);
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const procCount = async () => (await import('node:fs')).readdirSync('/proc').filter((n) => /^\d+$/.test(n)).length;
try {
  for (const [, fn] of methods) await measure(fn, 3); // warm-up
  for (let r = 0; r < ROUNDS; r += 1) {
    for (const [name, fn, n] of methods) record(`${name}|base`, await measure(fn, n));
    process.stderr.write(`round ${r + 1}: starting ${EXTRA} extra processes…\n`);
    sleepers = await startExtra(EXTRA);
    process.stderr.write(`  ${await procCount()} processes on the machine\n`);
    for (const [name, fn, n] of methods) record(`${name}|extra`, await measure(fn, n));
    sleepers.stdin.end();
    try { process.kill(-sleepers.pid, 'SIGKILL'); } catch { /* gone */ }
    await new Promise((resolve) => (sleepers.exitCode !== null || sleepers.signalCode !== null ? resolve() : sleepers.once('exit', resolve)));
    sleepers = undefined;
  }
  const row = (label, key) => {
    const [o, n] = [median(results[`ss + /proc (old)|${key}`]), median(results[`SO_PEERCRED|${key}`])];
    console.log(`| ${label} | ${o.toFixed(2)} | ${n.toFixed(3)} | ${(o / n).toFixed(0)} x |`);
  };
  console.log(`peer identification, ms per connection (median of ${ROUNDS} rounds; ${new Date().toISOString()})`);
  console.log('| processes | ss + /proc (old) | SO_PEERCRED | old / new |');
  console.log('|---|---|---|---|');
  row('as found', 'base');
  row(`${EXTRA} more`, 'extra');
} finally {
  cleanup();
}
