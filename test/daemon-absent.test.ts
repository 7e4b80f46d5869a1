import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startTestApp } from './helpers/app.js';
import type { TestApp } from './helpers/app.js';
import { createTestDatabase } from './helpers/dialects.js';
import type { TestDatabase } from './helpers/dialects.js';
import { call } from './helpers/flows.js';
import { runCli } from './helpers/cli.js';
import type { CliResult } from './helpers/cli.js';
import { findProgram } from './helpers/mail-daemons.js';
import { skipNotice } from './helpers/services.js';

// Defect 5 of issue 20: one rule for a daemon that is absent or unreachable,
// everywhere — HTTP 503 with Retry-After, CLI exit 69, and a line saying what
// to install or start. The real programs (when installed) with the daemon
// absent: a fail2ban socket path that does not exist, a Postfix configuration
// directory without main.cf, a PATH without the program.

const f2b = findProgram('fail2ban-client');
if (!f2b) skipNotice('fail2ban-client', 'not installed');
const postfix = findProgram('postqueue') && findProgram('postsuper');
if (!postfix) skipNotice('Postfix (postqueue, postsuper)', 'not installed');

const ID = '4B0A6210E3F';

/** The one error line (the direct helper logs its calls on stderr before it): no stack trace. */
function errorLine(r: CliResult): string {
  expect(r.stderr).not.toMatch(/^\s+at /m);
  return r.stderr.trimEnd().split('\n').at(-1) ?? '';
}

describe('an absent daemon through the API and the CLI: 503 + Retry-After / exit 69 with what to do', () => {
  let dir: string;
  let db: TestDatabase;
  let t: TestApp;
  let env: Record<string, string>;
  let socket: string;
  let pfDir: string;
  let emptyBin: string;
  const notRunning = () => `fail2ban is not running (no socket at ${socket}): start it with systemctl start fail2ban`;
  const notSetUp = () => `Postfix is not set up here (no main.cf in ${pfDir}): apt-get install postfix, or set MAILSVC_POSTFIX_CONFIG_DIR to its configuration directory`;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'mailsvc-absent-'));
    socket = join(dir, 'run', 'fail2ban.sock');
    pfDir = join(dir, 'postfix');
    emptyBin = join(dir, 'bin');
    mkdirSync(pfDir);
    mkdirSync(emptyBin);
    env = { MAILSVC_HELPER: 'direct', MAILSVC_FAIL2BAN_SOCKET: socket, MAILSVC_POSTFIX_CONFIG_DIR: pfDir };
    db = await createTestDatabase('sqlite');
    t = await startTestApp(db.url, { MAILSVC_MFA_REQUIRED: 'no', ...env });
    env = { ...env, MAILSVC_DATA_DIR: join(dir, 'data'), MAILSVC_ADMIN_PASSWORD: 'x-unused-password' };
    expect((await runCli(['db', 'migrate'], { env })).code).toBe(0);
  }, 90_000);
  afterAll(async () => {
    await t?.close();
    await db?.drop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  const expect503 = async (method: 'GET' | 'POST' | 'DELETE', url: string, detail: string, body?: unknown) => {
    const r = await call(t, method, url, t.basic(), body);
    expect(r.status, `${method} ${url}: ${JSON.stringify(r.body)}`).toBe(503);
    expect(r.headers['retry-after'], `${method} ${url}`).toBe('30');
    expect(r.body.detail, `${method} ${url}`).toBe(detail);
  };

  it.skipIf(!f2b)('bans list, ban and unban with no fail2ban socket', async () => {
    await expect503('GET', '/admin/bans', notRunning());
    await expect503('POST', '/admin/bans', notRunning(), { ip: '203.0.113.5', reason: 'brute force' });
    await expect503('DELETE', '/admin/bans/203.0.113.5', notRunning());
    for (const args of [['bans', 'list'], ['bans', 'ban', '203.0.113.5', 'brute force'], ['bans', 'unban', '203.0.113.5']]) {
      const r = await runCli(args, { env });
      expect(r.code, args.join(' ')).toBe(69);
      expect(errorLine(r)).toBe(`mailsvc: ${notRunning()}`);
    }
  });

  it('bans list with no fail2ban-client on the PATH: not installed, apt-get install fail2ban', async () => {
    const r = await runCli(['bans', 'list'], { env: { ...env, PATH: emptyBin } });
    expect(r.code, r.stderr).toBe(69);
    expect(errorLine(r)).toBe('mailsvc: fail2ban is not installed here (no fail2ban-client on the PATH): apt-get install fail2ban');
  });

  it.skipIf(!postfix)('queue list, counts, hold, release and delete with a config dir without main.cf', async () => {
    await expect503('GET', '/admin/queue', notSetUp());
    await expect503('GET', '/admin/queue/counts', notSetUp());
    await expect503('POST', `/admin/queue/${ID}/hold`, notSetUp());
    await expect503('POST', `/admin/queue/${ID}/release`, notSetUp());
    await expect503('DELETE', `/admin/queue/${ID}`, notSetUp());
    await expect503('DELETE', '/admin/queue?older_than=0', notSetUp());
    for (const args of [['queue', 'list'], ['queue', 'hold', ID], ['queue', 'release', ID], ['queue', 'delete', ID]]) {
      const r = await runCli(args, { env });
      expect(r.code, `${args.join(' ')}: ${r.stderr}`).toBe(69);
      expect(errorLine(r)).toBe(`mailsvc: ${notSetUp()}`);
    }
  });

  it('queue list and hold with no Postfix programs on the PATH: not installed, apt-get install postfix', async () => {
    const list = await runCli(['queue', 'list'], { env: { ...env, PATH: emptyBin } });
    expect(list.code, list.stderr).toBe(69);
    expect(errorLine(list)).toBe('mailsvc: Postfix is not installed here (no postqueue on the PATH): apt-get install postfix');
    const hold = await runCli(['queue', 'hold', ID], { env: { ...env, PATH: emptyBin } });
    expect(hold.code, hold.stderr).toBe(69);
    expect(errorLine(hold)).toBe('mailsvc: Postfix is not installed here (no postsuper on the PATH): apt-get install postfix');
  });
});
