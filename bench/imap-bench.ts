// IMAP LOGIN through real Dovecot (issue: "IMAP LOGIN latency p50/p99 and
// logins per second through the hook, next to Dovecot's own passwd-file passdb
// on the same Dovecot"). Target: hook login p50 at most 1.5 × passwd-file p50.
//
// One Dovecot (test/helpers/mail-daemons.ts, from deploy/) whose passdb chain
// is: a passwd-file passdb holding pf@example.org, then deploy/'s Lua hook
// passdb asking mailsvc, then the SQL fallback. The passwd-file hash is the
// very kind mailsvc stores ({ARGON2ID} + @node-rs/argon2 PHC, ARGON2_PARAMS),
// so both sides do one argon2id verify per login: Dovecot (libsodium) for the
// passwd-file user, mailsvc for the hook user's primary password. An app
// password costs mailsvc one SHA-256 HMAC lookup and one UPDATE, no argon2.
//
// The client is a minimal IMAP client on node:net in this process: connect,
// read the greeting, then time `a LOGIN` to its tagged `a OK` (the OK comes
// from the post-login imap process, so the time includes Dovecot starting it),
// then LOGOUT. Run alone: tsc -p tsconfig.bench.json && node var/bench-build/bench/imap-bench.js
import { execFile } from 'node:child_process';
import { chmodSync, chownSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { cpus, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { performance } from 'node:perf_hooks';
import { promisify } from 'node:util';
import pino from 'pino';
import { createTestDatabase } from '../test/helpers/dialects.js';
import { startTestApp } from '../test/helpers/app.js';
import { findProgram, mailDaemonsUnavailable, startDovecot } from '../test/helpers/mail-daemons.js';
import { loadMailSettings } from '../src/config/mail-settings.js';
import { startHookServer } from '../src/modules/mail-auth/hook-server.js';
import { hashMailPassword } from '../src/modules/accounts/mail-password.js';
import { ARGON2_PARAMS } from '../src/modules/auth/admin-credentials.js';
import type { MailAuthRequest, MailAuthResult } from '../src/modules/mail-auth/mail-auth.service.js';

const execFileP = promisify(execFile);
const pct = (xs: number[], p: number): number => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.ceil((p / 100) * xs.length) - 1)] ?? NaN;
const r2 = (n: number): number => Math.round(n * 100) / 100;
const progress = (s: string): void => void process.stderr.write(`imap-bench: ${s}\n`);

export const IMAP_TARGET_RATIO = 1.5;
/** Issue 26: a login with an app password at most 1.2 × Dovecot's own floor (passwd-file {PLAIN}, no hashing). */
export const IMAP_APP_PLAIN_TARGET_RATIO = 1.2;
const WARMUP = 10;
const SEQUENTIAL = 100;
const PARALLEL_CLIENTS = 4;
const PARALLEL_SECONDS = 5;
const IO_TIMEOUT_MS = 10_000;

const PF_USER = 'pf@example.org';
const PF_PW = 'pf-primary-password';
const BASE_USER = 'plain@example.org';
const BASE_PW = 'plain-password-1';
const HOOK_USER = 'hook@example.org';
const HOOK_PW = 'hook-primary-password';

type Case = { key: string; label: string; user: string; password: string };

/** Stops of the running Dovecot and hook server, for a watchdog that gives up. */
const running = new Set<() => Promise<void>>();
export async function stopImapDaemons(): Promise<void> {
  await Promise.all([...running].map((stop) => stop().catch(() => undefined)));
}

/** Dovecot's whole LOGIN with the connection already open, in ms; throws unless the tagged answer is OK. */
async function oneLogin(port: number, user: string, password: string): Promise<number> {
  const sock = connect(port, '127.0.0.1');
  sock.setNoDelay(true);
  sock.setTimeout(IO_TIMEOUT_MS, () => sock.destroy(new Error(`IMAP timeout for ${user}`)));
  let buf = '';
  let waiter: { prefix: string; resolve: (line: string) => void } | null = null;
  let failed: Error | null = null;
  const lines: string[] = [];
  const deliver = () => {
    while (waiter) {
      const i = lines.findIndex((l) => l.startsWith(waiter?.prefix ?? ''));
      if (i < 0) return;
      const [line] = lines.splice(0, i + 1).slice(-1);
      const w = waiter;
      waiter = null;
      w.resolve(line ?? '');
    }
  };
  sock.setEncoding('utf8');
  sock.on('data', (d: string) => {
    buf += d;
    let i: number;
    while ((i = buf.indexOf('\r\n')) >= 0) {
      lines.push(buf.slice(0, i));
      buf = buf.slice(i + 2);
    }
    deliver();
  });
  const rejecters: ((e: Error) => void)[] = [];
  const fail = (e: Error) => {
    failed ??= e;
    for (const r of rejecters.splice(0)) r(e);
  };
  sock.on('error', fail);
  sock.on('close', () => fail(new Error(`IMAP connection closed early for ${user}`)));
  const next = (prefix: string) => new Promise<string>((resolve, reject) => {
    if (failed) return reject(failed);
    rejecters.push(reject);
    waiter = { prefix, resolve };
    deliver();
  });
  const quote = (s: string) => `"${s.replace(/[\\"]/g, (c) => `\\${c}`)}"`;
  try {
    const greeting = await next('* ');
    if (!greeting.startsWith('* OK')) throw new Error(`IMAP greeting: ${greeting}`);
    const t0 = performance.now();
    sock.write(`a LOGIN ${quote(user)} ${quote(password)}\r\n`);
    const answer = await next('a ');
    const ms = performance.now() - t0;
    if (!answer.startsWith('a OK')) throw new Error(`IMAP LOGIN ${user}: ${answer}`);
    sock.write('b LOGOUT\r\n');
    await next('b ');
    return ms;
  } finally {
    sock.removeAllListeners('close');
    sock.on('error', () => undefined);
    sock.destroy();
  }
}

/** `clients` connections in a loop for `seconds`: logins per second and the latency under that load. */
async function loginRate(port: number, c: Case, clients: number, seconds: number) {
  const lat: number[] = [];
  const t0 = performance.now();
  const end = t0 + seconds * 1000;
  await Promise.all(Array.from({ length: clients }, async () => {
    while (performance.now() < end) lat.push(await oneLogin(port, c.user, c.password));
  }));
  const secs = (performance.now() - t0) / 1000;
  return { logins_per_s: r2(lat.length / secs), logins: lat.length, p50_ms: r2(pct(lat, 50)), p99_ms: r2(pct(lat, 99)) };
}

function uidGid(user: string, group: string): [number, number] {
  const field = (file: string, name: string) => Number(readFileSync(file, 'utf8').split('\n').find((l) => l.startsWith(`${name}:`))?.split(':')[2] ?? NaN);
  return [field('/etc/passwd', user), field('/etc/group', group)];
}

/**
 * mail-daemons.ts reads deploy/ relative to itself; compiled into
 * var/bench-build/ it looks for var/bench-build/deploy, so that is made a
 * link to the repository's deploy/ (inside the git-ignored build output).
 */
function linkDeployIntoBuild(): void {
  const buildRoot = fileURLToPath(new URL('../', import.meta.url));
  if (existsSync(join(buildRoot, 'deploy'))) return;
  for (let dir = dirname(buildRoot); dir !== dirname(dir); dir = dirname(dir)) {
    if (existsSync(join(dir, 'deploy', 'dovecot'))) {
      symlinkSync(join(dir, 'deploy'), join(buildRoot, 'deploy'));
      return;
    }
  }
  throw new Error(`no deploy/ directory above ${buildRoot}`);
}

export type ImapCaseResult = { label: string; p50_ms: number; p99_ms: number; mean_ms: number; logins_per_s: number | null; parallel_p50_ms: number | null };
export type ImapBenchResult = {
  skipped?: string;
  cases?: Record<string, ImapCaseResult>;
  ratios?: Record<string, { value: number; target: number; result: 'PASS' | 'MISS' }>;
  setup?: Record<string, unknown>;
};

export async function imapBench(): Promise<ImapBenchResult & Record<string, unknown>> {
  const missing = mailDaemonsUnavailable();
  if (missing) return { skipped: `Dovecot bench skipped: ${missing}` };
  linkDeployIntoBuild();
  const db = await createTestDatabase('sqlite');
  const t = await startTestApp(db.url, { MAILSVC_LOG_LEVEL: 'warn' }, { log: pino({ level: 'warn' }), kicker: { kick: async () => ({ kicked: false, detail: '' }) } });
  const dir = mkdtempSync(join(tmpdir(), 'mailsvc-imap-bench-'));
  chmodSync(dir, 0o755);
  const cleanups: (() => Promise<void>)[] = [];
  try {
    await t.ctx.domains.create('example.org');
    await t.ctx.accounts.create({ address: HOOK_USER, password: HOOK_PW });
    const app = await t.ctx.appPasswords.create(HOOK_USER, { name: 'bench' });

    // Count what the hook answers, so a login that silently took another path
    // (the SQL fallback, or the passwd-file) makes the run invalid.
    const answered = { primary: 0, app_password: 0, refused: 0, other_user: 0 };
    const auth = t.ctx.mailAuth;
    const check = auth.check.bind(auth);
    auth.check = async (req: MailAuthRequest): Promise<MailAuthResult> => {
      const r = await check(req);
      if (req.user !== HOOK_USER) answered.other_user += 1;
      if (r.ok) answered[r.via] += 1;
      else answered.refused += 1;
      return r;
    };

    // As deployed: the socket in a directory Dovecot may enter, 0660 with Dovecot's group.
    const hookSocket = join(dir, 'auth-hook.sock');
    const group = loadMailSettings({ MAILSVC_MAIL_AUTH_SOCKET_GROUP: 'dovecot' }, t.dataDir).authHookSocketGroup;
    const hook = await startHookServer({ socketPath: hookSocket, socketGroup: group }, auth, t.ctx.log);
    const stopHook = () => hook.close();
    cleanups.push(stopHook);
    running.add(stopHook);

    // The passwd-file: the same {ARGON2ID} string mailsvc stores, nothing stripped;
    // plus a {PLAIN} user, to show what a login costs Dovecot without any hashing.
    const pfHash = await hashMailPassword(PF_PW);
    const phc = `$argon2id$v=19$m=${ARGON2_PARAMS.memoryCost},t=${ARGON2_PARAMS.timeCost},p=${ARGON2_PARAMS.parallelism}$`;
    if (!pfHash.startsWith(`{ARGON2ID}${phc}`)) throw new Error(`unexpected hash header: ${pfHash.slice(0, 40)}`);
    const passwdFile = join(dir, 'users.passwd');
    const homes = join(dir, 'homes');
    mkdirSync(homes);
    const [nobody, nogroup] = uidGid('nobody', 'nogroup');
    chownSync(homes, nobody, nogroup);
    // user:password:uid:gid:gecos:home:shell:extra — a passwd-file userdb needs uid and gid in the line.
    const line = (user: string, password: string) => `${user}:${password}:${nobody}:${nogroup}::${homes}/${user.replace('@', '_')}::`;
    writeFileSync(passwdFile, `${line(PF_USER, pfHash)}\n${line(BASE_USER, `{PLAIN}${BASE_PW}`)}\n`, { mode: 0o644 });
    const extraPassdbFirst = [
      '# mailsvc bench: no auth cache, so every login really authenticates.',
      'auth_cache_size = 0',
      '# passwd-file first: its users end here; anyone else (unknown here) continues to the hook.',
      'passdb {',
      '  driver = passwd-file',
      `  args = scheme=ARGON2ID username_format=%u ${passwdFile}`,
      '  result_success = return-ok',
      '  result_failure = continue',
      '  result_internalfail = continue',
      '}',
      '# Its users get their userdb from the same file; unknown users continue to the SQL userdb.',
      'userdb {',
      '  driver = passwd-file',
      `  args = username_format=%u ${passwdFile}`,
      '  default_fields = mail=maildir:~/Maildir',
      '  result_failure = continue',
      '}',
    ].join('\n');
    const dovecot = await startDovecot({ dialect: 'sqlite', databaseUrl: db.url, hookSocket, extraPassdbFirst });
    const stopDovecot = () => dovecot.stop();
    cleanups.push(stopDovecot);
    running.add(stopDovecot);
    const doveconf = findProgram('doveconf') ?? 'doveconf';
    const effective = async (name: string) => (await execFileP(doveconf, ['-c', dovecot.configPath, '-h', name])).stdout.trim();
    const authCacheSize = await effective('auth_cache_size');
    if (authCacheSize !== '0') throw new Error(`auth_cache_size is ${authCacheSize}, want 0`);
    const passdbs = (await execFileP(doveconf, ['-c', dovecot.configPath, '-n', 'passdb'])).stdout;
    const chain = [...passdbs.matchAll(/driver = (\S+)/g)].map((m) => m[1]).join(' → ');

    const cases: Case[] = [
      { key: 'passwd_file', label: 'passwd-file, {ARGON2ID} (Dovecot verifies)', user: PF_USER, password: PF_PW },
      { key: 'hook_primary', label: 'hook, primary password (mailsvc argon2id)', user: HOOK_USER, password: HOOK_PW },
      { key: 'hook_app', label: 'hook, app password (HMAC lookup)', user: HOOK_USER, password: app.password },
      { key: 'passwd_file_plain', label: 'passwd-file, {PLAIN} (no hash; info)', user: BASE_USER, password: BASE_PW },
    ];
    const port = dovecot.imapPort;
    progress(`Dovecot on 127.0.0.1:${port}, passdbs ${chain}, auth_cache_size ${authCacheSize}; ${WARMUP} warm-up + ${SEQUENTIAL} sequential logins per case`);
    const tail = () => dovecot.logs().trimEnd().split('\n').slice(-15).join('\n');
    for (const c of cases) {
      for (let i = 0; i < WARMUP; i += 1) {
        await oneLogin(port, c.user, c.password).catch((err: unknown) => {
          throw new Error(`${err instanceof Error ? err.message : String(err)}\nDovecot log:\n${tail()}`);
        });
      }
    }
    // Interleaved, one login of each case per round, so machine drift hits all alike.
    const seq = new Map<string, number[]>(cases.map((c) => [c.key, []]));
    for (let i = 0; i < SEQUENTIAL; i += 1) for (const c of cases) seq.get(c.key)?.push(await oneLogin(port, c.user, c.password));
    const rates = new Map<string, Awaited<ReturnType<typeof loginRate>>>();
    for (const c of cases.slice(0, 3)) {
      progress(`${PARALLEL_CLIENTS} parallel clients for ${PARALLEL_SECONDS} s: ${c.label}`);
      rates.set(c.key, await loginRate(port, c, PARALLEL_CLIENTS, PARALLEL_SECONDS));
    }

    const hookPrimaryLogins = WARMUP + SEQUENTIAL + (rates.get('hook_primary')?.logins ?? 0);
    const hookAppLogins = WARMUP + SEQUENTIAL + (rates.get('hook_app')?.logins ?? 0);
    if (answered.other_user !== 0 || answered.refused !== 0 || answered.primary !== hookPrimaryLogins || answered.app_password !== hookAppLogins) {
      throw new Error(`the hook did not answer exactly the hook logins: ${JSON.stringify(answered)}, want primary ${hookPrimaryLogins}, app_password ${hookAppLogins}`);
    }

    const out: Record<string, ImapCaseResult> = {};
    for (const c of cases) {
      const xs = seq.get(c.key) ?? [];
      const rate = rates.get(c.key);
      out[c.key] = {
        label: c.label,
        p50_ms: r2(pct(xs, 50)),
        p99_ms: r2(pct(xs, 99)),
        mean_ms: r2(xs.reduce((a, b) => a + b, 0) / xs.length),
        logins_per_s: rate?.logins_per_s ?? null,
        parallel_p50_ms: rate?.p50_ms ?? null,
      };
    }
    const ratio = (k: string, anchor = 'passwd_file', target = IMAP_TARGET_RATIO) => {
      const value = r2((out[k]?.p50_ms ?? NaN) / (out[anchor]?.p50_ms ?? NaN));
      return { value, target, result: value <= target ? 'PASS' as const : 'MISS' as const };
    };
    return {
      cases: out,
      ratios: {
        hook_primary_to_passwd_file_p50: ratio('hook_primary'),
        hook_app_to_passwd_file_p50: ratio('hook_app'),
        hook_app_to_plain_p50: ratio('hook_app', 'passwd_file_plain', IMAP_APP_PLAIN_TARGET_RATIO),
      },
      parallel: Object.fromEntries(rates),
      setup: {
        dovecot: (await execFileP(findProgram('dovecot') ?? 'dovecot', ['--version'])).stdout.trim(),
        passdb_chain: chain,
        auth_cache_size: Number(authCacheSize),
        hash: `{ARGON2ID}$argon2id$v=19$m=${ARGON2_PARAMS.memoryCost},t=${ARGON2_PARAMS.timeCost},p=${ARGON2_PARAMS.parallelism} (hashMailPassword, as mailsvc stores it)`,
        database: 'sqlite',
        client: 'minimal IMAP client on node:net in the bench process (mailsvc\'s hook server shares that process); time = LOGIN sent → tagged OK, connect and greeting excluded',
        sequential: { warmup_per_case: WARMUP, logins_per_case: SEQUENTIAL, interleaved: true },
        parallel: { clients: PARALLEL_CLIENTS, seconds_per_case: PARALLEL_SECONDS, connect_per_login: true },
        hook_answers: answered,
        cpus: cpus().length,
        note: 'argon2id runs on the same CPUs for both: in Dovecot (libsodium) for passwd-file, in mailsvc (@node-rs/argon2, libuv thread pool) for the hook primary password',
      },
    };
  } finally {
    for (const c of cleanups.reverse()) {
      running.delete(c);
      await c().catch(() => undefined);
    }
    rmSync(dir, { recursive: true, force: true });
    await t.close();
    await db.drop();
  }
}

/** The IMAP part of a table: [figure, value, target, result] rows. */
export function imapRows(r: ImapBenchResult): string[][] {
  if (r.skipped || !r.cases || !r.ratios) return [['IMAP LOGIN through Dovecot', 'skipped', '', r.skipped ?? '']];
  const rows: string[][] = [];
  for (const c of Object.values(r.cases)) {
    rows.push([`IMAP ${c.label}`, `p50 ${c.p50_ms} / p99 ${c.p99_ms} ms` + (c.logins_per_s === null ? '' : `, ${c.logins_per_s} logins/s (p50 ${c.parallel_p50_ms} ms)`), '', '']);
  }
  const { hook_primary_to_passwd_file_p50: p, hook_app_to_passwd_file_p50: a, hook_app_to_plain_p50: f } = r.ratios;
  if (p) rows.push(['IMAP hook primary p50 / passwd-file p50', String(p.value), `≤ ${p.target}`, p.result]);
  if (a) rows.push(['IMAP hook app-password p50 / passwd-file p50', String(a.value), `≤ ${a.target}`, a.result]);
  if (f) rows.push(['IMAP hook app-password p50 / passwd-file {PLAIN} p50', String(f.value), `≤ ${f.target}`, f.result]);
  return rows;
}

export function formatTable(head: string[], rows: string[][]): string {
  const w = head.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: string[]) => `| ${cells.map((c, i) => c.padEnd(w[i] ?? 0)).join(' | ')} |`;
  return [line(head), `|${w.map((n) => '-'.repeat(n + 2)).join('|')}|`, ...rows.map(line)].join('\n');
}

if (process.argv[1]?.endsWith('imap-bench.js')) {
  const r = await imapBench();
  console.log(formatTable(['figure', 'value', 'target', 'result'], imapRows(r)));
  console.log(JSON.stringify(r, null, 2));
}
