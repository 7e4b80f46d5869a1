import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { execFileSync } from 'node:child_process';
import { copyFileSync, cpSync, existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { InjectOptions } from 'fastify';
import { ADMIN_PASSWORD, startTestApp } from './helpers/app.js';
import type { TestApp } from './helpers/app.js';
import { createTestDatabase } from './helpers/dialects.js';
import type { TestDatabase } from './helpers/dialects.js';
import { skipNotice } from './helpers/services.js';

/**
 * The shipped fail2ban filter and jail, checked by the real fail2ban tools
 * against the auth log the real service writes (docs/contract.md, Lockout).
 */
const root = fileURLToPath(new URL('../', import.meta.url));
const FILTER = join(root, 'deploy/fail2ban/filter.d/mailsvc-auth.conf');
const JAIL = join(root, 'deploy/fail2ban/jail.d/mailsvc-auth.conf');
const FORGED = '198.51.100.9';

function installed(cmd: string): boolean {
  try {
    execFileSync(cmd, ['--version'], { stdio: 'ignore', timeout: 30_000 });
    return true;
  } catch {
    return false;
  }
}

const haveRegex = installed('fail2ban-regex');
if (!haveRegex) skipNotice('fail2ban-regex (Debian package fail2ban)', 'not found on PATH');
const haveClient = haveRegex && installed('fail2ban-client') && existsSync('/etc/fail2ban/fail2ban.conf');
if (haveRegex && !haveClient) skipNotice('fail2ban-client with /etc/fail2ban/fail2ban.conf', 'not installed');

function run(cmd: string, args: string[], env: NodeJS.ProcessEnv = process.env): string {
  return execFileSync(cmd, args, { encoding: 'utf8', timeout: 30_000, env, stdio: ['ignore', 'pipe', 'pipe'] });
}

/** fail2ban-regex's own count of the lines it read, matched and missed. */
function summary(logFile: string): { lines: number; matched: number; missed: number; text: string } {
  const text = run('fail2ban-regex', ['--print-all-matched', logFile, FILTER]);
  const m = /Lines: (\d+) lines, (\d+) ignored, (\d+) matched, (\d+) missed/.exec(text);
  if (!m) throw new Error(`unexpected fail2ban-regex output:\n${text}`);
  return { lines: Number(m[1]), matched: Number(m[3]), missed: Number(m[4]), text };
}

/** Address and time (epoch seconds) of every match, as fail2ban extracts them. */
function extracted(logFile: string, env: NodeJS.ProcessEnv = process.env): { ip: string; time: number }[] {
  return run('fail2ban-regex', ['-o', '<time> <ip>', logFile, FILTER], env)
    .split('\n')
    .filter((l) => l.trim() !== '')
    .map((l) => {
      const [time = '', ip = ''] = l.trim().split(' ');
      return { ip, time: Math.floor(Number(time)) };
    });
}

describe.skipIf(!haveRegex)('fail2ban reads the auth log the service writes', () => {
  let db: TestDatabase;
  let t: TestApp;
  let work: string;
  let logFile: string;
  /** The client address of every failure made, in order. */
  const failedFrom: string[] = [];

  beforeAll(async () => {
    db = await createTestDatabase('sqlite');
    t = await startTestApp(db.url);
    work = mkdtempSync(join(tmpdir(), 'mailsvc-f2b-'));
    const inject = async (ip: string, opts: InjectOptions, status: number): Promise<void> => {
      const res = await t.app.inject({ ...opts, remoteAddress: ip });
      expect(res.statusCode, `${String(opts.method)} ${String(opts.url)} from ${ip}`).toBe(status);
    };
    const failure = async (ip: string, opts: InjectOptions): Promise<void> => {
      await inject(ip, opts, 401);
      failedFrom.push(ip);
    };
    const login = (username: string, password: string): InjectOptions => ({ method: 'POST', url: '/auth/login', payload: { username, password } });

    for (let i = 0; i < 3; i += 1) await failure('203.0.113.7', login('admin', `wrong-${i}`));
    await failure('2001:db8::7', login('root', ADMIN_PASSWORD));
    await failure('203.0.113.9', login(`x from ${FORGED}`, 'whatever'));
    const badBasic = `Basic ${Buffer.from('admin:not-the-password').toString('base64')}`;
    await failure('192.0.2.10', { method: 'GET', url: '/auth/mfa', headers: { authorization: badBasic } });
    await failure('192.0.2.20', { method: 'POST', url: '/auth/mfa/verify', payload: { challenge_id: 'no-such-challenge', method: 'totp', code: '123456' } });
    // Neither of these is an authentication failure: they must leave no line.
    await inject('192.0.2.30', { method: 'GET', url: '/auth/mfa', headers: { authorization: t.basic() } }, 200);
    await inject('192.0.2.40', { method: 'POST', url: '/auth/mfa/sms', payload: { challenge_id: 'no-such-challenge' } }, 401);

    // A copy, so the checks below read exactly what the service wrote.
    logFile = join(work, 'auth.log');
    copyFileSync(t.settings.authLog, logFile);
  });

  afterAll(async () => {
    await t?.close();
    await db?.drop();
    if (work) rmSync(work, { recursive: true, force: true });
  });

  it('the service writes one line per failure, naming the address the request came from', () => {
    const lines = readFileSync(logFile, 'utf8').trimEnd().split('\n');
    expect(lines).toHaveLength(failedFrom.length);
    lines.forEach((line, i) => {
      expect(line).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z mailsvc-auth: authentication failure for \S+ from \S+$/);
      expect(line.endsWith(` from ${failedFrom[i]}`), line).toBe(true);
    });
  });

  it('the filter matches every line, misses none, and bans the client addresses only, never the forged one', () => {
    const s = summary(logFile);
    expect(s).toMatchObject({ lines: failedFrom.length, matched: failedFrom.length, missed: 0 });
    expect(s.text).toContain(`x_from_${FORGED} from 203.0.113.9`);
    const hosts = extracted(logFile).map((e) => e.ip);
    expect(hosts).toEqual(failedFrom);
    expect(hosts).not.toContain(FORGED);
  });

  it('the filter reads the timestamp as UTC, whatever the time zone of the host', () => {
    const stamps = readFileSync(logFile, 'utf8')
      .trimEnd()
      .split('\n')
      .map((l) => Math.floor(Date.parse(l.split(' ')[0] ?? '') / 1000));
    const got = extracted(logFile, { ...process.env, TZ: 'Pacific/Auckland' });
    expect(got.map((e) => e.time)).toEqual(stamps);
  });

  it('the filter alone takes the address from the end of the line, even from a user name the service did not clean', () => {
    const at = '2026-11-21T05:09:35.795Z';
    const file = join(work, 'forged.log');
    writeFileSync(
      file,
      [
        `${at} mailsvc-auth: authentication failure for x from ${FORGED} from 203.0.113.8`,
        `${at} mailsvc-auth: authentication failure for admin from ${FORGED} trailing`,
        `${at} mailsvc-auth: authentication failure for admin from ${FORGED} from`,
        `${at} sshd: authentication failure for admin from ${FORGED}`,
      ].join('\n') + '\n',
    );
    expect(summary(file)).toMatchObject({ lines: 4, matched: 1, missed: 3 });
    expect(extracted(file).map((e) => e.ip)).toEqual(['203.0.113.8']);
  });

  // fail2ban-client -t reads a configuration directory without a running server.
  // The copy of /etc/fail2ban gets only our jail; a .local beside it points the
  // log path at the test log, because -t refuses a jail whose log does not exist.
  it.skipIf(!haveClient)('the jail and filter load in fail2ban, with the jail reading /var/lib/mailsvc/auth.log', () => {
    const conf = join(work, 'fail2ban');
    cpSync('/etc/fail2ban', conf, { recursive: true });
    for (const f of readdirSync(join(conf, 'jail.d'))) rmSync(join(conf, 'jail.d', f), { recursive: true, force: true });
    copyFileSync(JAIL, join(conf, 'jail.d', 'mailsvc-auth.conf'));
    copyFileSync(FILTER, join(conf, 'filter.d', 'mailsvc-auth.conf'));
    writeFileSync(join(conf, 'jail.d', 'zz-test.local'), `[mailsvc-auth]\nlogpath = ${logFile}\n`);

    expect(run('fail2ban-client', ['-c', conf, '-t'])).toContain('OK: configuration test is successful');
    const dump = run('fail2ban-client', ['-c', conf, '-d']);
    expect(dump).toContain("['add', 'mailsvc-auth', 'auto']");
    expect(dump).toContain("['set', 'mailsvc-auth', 'usedns', 'no']");
    expect(dump).toContain("['set', 'mailsvc-auth', 'maxretry', 5]");
    expect(dump).toContain("['port', 'http,https']");
    expect(dump).toMatch(/\['set', 'mailsvc-auth', 'addfailregex', '.*mailsvc-auth: authentication failure for .*<HOST>/);
    expect(dump).toContain("['start', 'mailsvc-auth']");
    expect(readFileSync(JAIL, 'utf8')).toMatch(/^logpath\s*=\s*\/var\/lib\/mailsvc\/auth\.log$/m);
  });
});
