// Where does a Bearer GET /auth/mfa spend its time? (npm run build && node bench/profile.mjs)
// Not part of npm run bench: a diagnosis, not a measurement to track.
//
// Part 1, ablation over HTTP: the service child with one piece taken away at a
//   time (lib/ablate.mjs), autocannon 50 connections, and the child's own CPU
//   time per request from /proc (main thread = the event loop, user + system).
// Part 2: a V8 CPU profile of the unmodified service child during a load run:
//   self time by package, inclusive time of the pieces. Kept in var/bench/prof/.
//   The profiler samples wall-clock time of the main thread, so a thread that
//   is descheduled inside a syscall is charged to that native frame (writev).
// Part 3: the pieces timed one by one in this process, sequentially, no HTTP.
// Env: PROFILE_DURATION (s per load run, default 5), PROFILE_LOG_LEVEL (default warn).
import { createHash, randomUUID } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { setTimeout } from 'node:timers';
import { fileURLToPath } from 'node:url';
import { verify } from '@node-rs/argon2';
import SqliteDatabase from 'better-sqlite3';
import pino from 'pino';
import { request } from 'undici';
import { openService } from '../dist/app/service.js';
import { hashPassword } from '../dist/modules/auth/admin-credentials.js';
import { killAll, machineBusySeconds, startChild } from './lib/child.mjs';
import { load } from './lib/load.mjs';
import { benchSettings } from './lib/mailsvc-settings.mjs';
import { summarize } from './lib/profile-summary.mjs';
import { percentile, round, table } from './lib/stats.mjs';

const HERE = dirname(fileURLToPath(import.meta.url));
const PROF_DIR = join(HERE, '..', 'var', 'bench', 'prof');
const DURATION = Number(process.env.PROFILE_DURATION ?? 5);
const LEVEL = process.env.PROFILE_LOG_LEVEL ?? 'warn';
const PASSWORD = `bench-${randomUUID()}`;

setTimeout(() => {
  console.error('profile: over 120 s, giving up');
  killAll();
  process.exit(1);
}, 120_000).unref();

// Synchronous frames only: an async function resumed after an await has no
// caller on its stack, so "inclusive" is only meaningful for these.
const PROBES = [
  ['better-sqlite3 prepare (Statement constructor)', (f, u) => f === 'prepare' && u.includes('better-sqlite3')],
  ['better-sqlite3 run (stmt.all)', (f, u) => f === 'all' && u === ''],
  ['Kysely compileQuery (SQL text from the tree)', (f, u) => f === 'compileQuery' && u.includes('/kysely/')],
  ['Kysely SqliteDriver executeQuery (prepare + run)', (f, u) => f === 'executeQuery' && u.includes('sqlite-driver')],
  ['response serialization (reply serialize)', (f, u) => f === 'serialize' && u.includes('/fastify/lib/reply.js')],
  ['pino (child logger, level checks)', (f, u) => u.includes('/pino/') || u.includes('/sonic-boom/') || u.includes('/pino-std-serializers/')],
  ['sha256 (token secret)', (f, u) => f === 'sha256' && u.includes('/dist/shared/crypto.js')],
].map(([label, match]) => ({ label, match }));

async function startService(name, dir, ablate = '') {
  const dataDir = join(dir, name);
  mkdirSync(dataDir);
  const child = await startChild(join(HERE, 'serve-mailsvc.mjs'), {
    env: { BENCH_DATA_DIR: dataDir, BENCH_ADMIN_PASSWORD: PASSWORD, BENCH_LOG_LEVEL: LEVEL, BENCH_ABLATE: ablate },
    logFile: join(dir, `${name}.log`),
  });
  const res = await request(`${child.url}/auth/login`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ username: 'admin', password: PASSWORD }),
  });
  const body = await res.body.json();
  if (res.statusCode !== 200) throw new Error(`login: ${res.statusCode} ${JSON.stringify(body)}`);
  return { child, target: { title: name, url: `${child.url}/auth/mfa`, headers: { authorization: `Bearer ${body.access_token}` }, connections: 50 } };
}

/** One load run with the child's CPU time around it. */
async function measured(child, target) {
  await load({ ...target, duration: 2 });
  const a = child.cpuSeconds();
  const m0 = machineBusySeconds();
  const own0 = process.cpuUsage();
  const t0 = performance.now();
  const res = await load({ ...target, duration: DURATION });
  const wall = (performance.now() - t0) / 1000;
  const own = process.cpuUsage(own0);
  const m1 = machineBusySeconds();
  const b = child.cpuSeconds();
  const us = (k, f) => ((b[k][f] - a[k][f]) * 1e6) / res.total;
  const childCpu = b.process.user + b.process.sys - a.process.user - a.process.sys;
  return {
    res,
    mainUser: us('main', 'user'),
    mainSys: us('main', 'sys'),
    other: us('process', 'user') + us('process', 'sys') - us('main', 'user') - us('main', 'sys'),
    // The rest of the machine during the run, 100% = one core: a noisy row shows here.
    machineOtherPct: m0 === null ? null : Math.max(0, Math.round((100 * (m1 - m0 - childCpu - (own.user + own.system) / 1e6)) / wall)),
  };
}

async function ablation(dir) {
  const variants = [
    ['full service (as in npm run bench)', ''],
    ['+ prepared statements cached', 'stmt-cache'],
    ['- token lookup (guard stubbed)', 'guard'],
    ['- MFA record query (status stubbed)', 'mfa'],
    ['- both: no database at all', 'guard,mfa'],
  ];
  const rows = [];
  for (const [label, ablate] of variants) {
    const { child, target } = await startService(`ablate-${ablate || 'none'}`, dir, ablate);
    try {
      rows.push([label, await measured(child, target)]);
    } finally {
      await child.stop();
    }
  }
  const bare = await startChild(join(HERE, 'serve-bare.mjs'), {});
  try {
    rows.push(['bare Fastify route', await measured(bare, { title: 'bare', url: `${bare.url}/bare`, connections: 50 })]);
  } finally {
    await bare.stop();
  }
  console.log(`== 1. ablation over HTTP: GET /auth/mfa, Bearer, log ${LEVEL}, 50 connections, ${DURATION} s each; CPU from /proc (1/100 s ticks)`);
  console.log(
    table([
      ['variant', 'req/s', 'p50 ms', 'p99 ms', 'main CPU µs/req', 'of which sys', 'other threads µs/req', 'rest of machine CPU'],
      ...rows.map(([label, m]) => [
        label,
        round(m.res.rps, 0),
        m.res.p50,
        m.res.p99,
        round(m.mainUser + m.mainSys, 1),
        round(m.mainSys, 1),
        round(m.other, 1),
        m.machineOtherPct === null ? '?' : `${m.machineOtherPct}%`,
      ]),
    ]),
  );
  console.log('(req/s depends on the machine being quiet: a row whose "rest of machine" is well above 0% is noisy; CPU µs/req moves much less)');
}

async function profileService(dir) {
  const { child, target } = await startService('profiled', dir);
  try {
    await load({ ...target, duration: 2 });
    const file = join(PROF_DIR, `mailsvc-${LEVEL}.cpuprofile`);
    await child.profile('start', { intervalUs: 100 });
    const res = await load({ ...target, duration: DURATION });
    await child.profile('stop', { file });
    const s = summarize(JSON.parse(readFileSync(file, 'utf8')), PROBES);
    const perReq = (us) => round(us / res.total, 1);
    const pct = (us) => round((100 * us) / s.busyUs, 1);
    console.log(`\n== 2. V8 CPU profile of the service child, ${round(res.rps, 0)} req/s under the profiler: ${file}`);
    console.log(table([['self time by package', 'µs/req', '% busy'], ...s.packages.slice(0, 10).map(([k, t]) => [k, perReq(t), pct(t)])]));
    console.log('');
    console.log(table([['top functions, self time', 'µs/req', '% busy'], ...s.topFunctions.slice(0, 12).map(([k, t]) => [k.slice(0, 90), perReq(t), pct(t)])]));
    console.log('');
    console.log(table([['inclusive (the frame and all below it)', 'µs/req', '% busy'], ...s.inclusive.map(([k, t]) => [k, perReq(t), pct(t)])]));
  } finally {
    await child.stop();
  }
}

/** Median of n timed calls, for slow pieces where one stray sample would skew a mean. */
async function medianIt(label, n, fn, warm = 3) {
  for (let i = 0; i < warm; i++) await fn();
  const samples = [];
  for (let i = 0; i < n; i++) {
    const t = performance.now();
    await fn();
    samples.push((performance.now() - t) * 1000);
  }
  return [label, round(percentile(samples, 50), 1)];
}

async function timeIt(label, n, fn, warm = Math.min(2000, n)) {
  for (let i = 0; i < warm; i++) await fn();
  const t = performance.now();
  for (let i = 0; i < n; i++) await fn();
  return [label, round(((performance.now() - t) * 1000) / n, 2)];
}

async function micro() {
  const dataDir = mkdtempSync(join(tmpdir(), 'mailsvc-profile-'));
  const sink = pino.destination({ dest: '/dev/null', sync: true });
  const log = pino({ level: LEVEL, redact: ['req.headers.authorization', 'req.headers.cookie'] }, sink);
  const settings = benchSettings({ dataDir, password: PASSWORD, logLevel: LEVEL });
  const modules = await openService(settings, { log });
  const [{ tokens, guard, auth }, { service: mfa }] = await Promise.all([modules.get('auth'), modules.get('mfa')]);
  const ctx = { tokens, guard, auth, mfa, db: modules.infra.db, close: () => modules.infra.close() };
  try {
    const { access_token: token } = await ctx.tokens.issue('admin', false);
    const id = token.slice(0, token.indexOf('.'));
    const secret = token.slice(token.indexOf('.') + 1);
    const raw = new SqliteDatabase(join(dataDir, 'mailsvc.db'));
    const tokenSql = ctx.db.selectFrom('access_tokens').selectAll().where('id', '=', id).compile().sql;
    const cached = raw.prepare(tokenSql);
    const infoLog = pino({ level: 'info', redact: ['req.headers.authorization', 'req.headers.cookie'] }, sink);
    const reqLike = { method: 'GET', url: '/auth/mfa', host: '127.0.0.1:1234', remoteAddress: '127.0.0.1', remotePort: 50000 };
    const N = 20000;
    const rows = [
      await timeIt('guard.authenticate (Bearer): the whole preHandler', N, () => ctx.guard.authenticate({ ip: '127.0.0.1', authorization: `Bearer ${token}`, setupPath: true })),
      await timeIt('tokens.validate: token lookup + sha256 + compare', N, () => ctx.tokens.validate(token)),
      await timeIt('mfa.status: MFA record query + status object', N, () => ctx.mfa.status()),
      await timeIt('Kysely: build + compile the token query only', N, () => ctx.db.selectFrom('access_tokens').selectAll().where('id', '=', id).compile()),
      await timeIt('Kysely: token query executeTakeFirst (build, compile, mutex, run)', N, () => ctx.db.selectFrom('access_tokens').selectAll().where('id', '=', id).executeTakeFirst()),
      await timeIt('better-sqlite3: prepare + get (what the Kysely driver does)', N, () => raw.prepare(tokenSql).all(id)),
      await timeIt('better-sqlite3: cached statement get', N, () => cached.all(id)),
      await timeIt('sha256 hex of the token secret', N, () => createHash('sha256').update(secret).digest('hex')),
      await timeIt(`pino child logger per request (level ${LEVEL})`, N, () => log.child({ reqId: 'req-1' })),
      await timeIt('pino: 2 request lines at info (incoming + completed, to /dev/null)', N, () => {
        const child = infoLog.child({ reqId: 'req-1' });
        child.info({ req: reqLike }, 'incoming request');
        child.info({ res: { statusCode: 200 }, responseTime: 1.23 }, 'request completed');
      }),
    ];
    const hash = await hashPassword(PASSWORD);
    const loginRows = [
      await medianIt('argon2id verify, ARGON2_PARAMS', 30, () => verify(hash, PASSWORD)),
      await medianIt('auth.login: whole login without HTTP (verify, MFA record, token INSERT)', 30, () => ctx.auth.login('127.0.0.1', 'admin', PASSWORD)),
      await medianIt('tokens.issue: the token INSERT alone (SQLite commit, WAL)', 300, () => ctx.tokens.issue('admin', false), 20),
    ];
    raw.close();
    console.log(`\n== 3. pieces timed in-process, sequential, ${N} calls each, no HTTP (log level ${LEVEL})`);
    console.log(table([['piece', 'µs/call'], ...rows]));
    console.log('');
    console.log(table([['login pieces, sequential, median', 'µs/call'], ...loginRows]));
  } finally {
    await ctx.close();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

async function main() {
  mkdirSync(PROF_DIR, { recursive: true });
  const tmp = mkdtempSync(join(tmpdir(), 'mailsvc-profile-'));
  try {
    await ablation(tmp);
    await profileService(tmp);
    await micro();
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
}

main().then(
  () => process.exit(0),
  (err) => {
    killAll();
    console.error('profile failed:', err);
    process.exit(1);
  },
);
