import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtempSync, rmSync } from 'node:fs';
import { networkInterfaces, tmpdir } from 'node:os';
import { join } from 'node:path';
import { createTestDatabase } from '../../../test/helpers/dialects.js';
import type { TestDatabase } from '../../../test/helpers/dialects.js';
import { startTestApp } from '../../../test/helpers/app.js';
import type { TestApp } from '../../../test/helpers/app.js';
import { runCli } from '../../../test/helpers/cli.js';
import { fail2banUnavailable, startFail2ban } from '../../../test/helpers/fail2ban-server.js';
import type { Fail2banServer } from '../../../test/helpers/fail2ban-server.js';

const noF2b = fail2banUnavailable() !== null;
const ADMIN_AT = '203.0.113.50';
/** An address of this host that is not loopback (any interface), when there is one. */
const hostAddress = Object.values(networkInterfaces())
  .flat()
  .find((a) => a && !a.internal && a.family === 'IPv4')?.address;

// The safety rule: a ban never reaches loopback, the host's own addresses,
// MAILSVC_TRUSTED_PROXIES, fail2ban's ignoreip, or the caller's own address
// (or a network holding any of them). Each refusal says why and bans nothing.
describe.skipIf(noF2b)('bans never lock out the host, its proxies, its allowlist or the calling administrator', () => {
  let db: TestDatabase;
  let t: TestApp;
  let f2b: Fail2banServer;
  let dataDir: string;
  let cliEnv: Record<string, string>;

  beforeAll(async () => {
    f2b = await startFail2ban(['sshd', 'dovecot'], { ignoreip: '127.0.0.1/8 ::1 198.51.100.0/25 2001:db8:aa::/48' });
    db = await createTestDatabase('sqlite');
    t = await startTestApp(db.url, { MAILSVC_MFA_REQUIRED: 'no', MAILSVC_TRUSTED_PROXIES: '192.0.2.200,2001:db8:bb::/64', ...f2b.env });
    dataDir = mkdtempSync(join(tmpdir(), 'mailsvc-bans-sec-'));
    cliEnv = { MAILSVC_DATA_DIR: dataDir, MAILSVC_ADMIN_PASSWORD: 'x-unused-password', ...f2b.env };
    expect((await runCli(['db', 'migrate'], { env: cliEnv })).code).toBe(0);
  }, 90_000);
  afterAll(async () => {
    await t?.close();
    await db?.drop();
    await f2b?.stop();
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  });

  const banFrom = async (from: string, ip: string) => {
    const res = await t.app.inject({ method: 'POST', url: '/admin/bans', remoteAddress: from, headers: { authorization: t.basic() }, payload: { ip, reason: 'test' } });
    return { status: res.statusCode, detail: String(res.json<{ detail?: string }>().detail) };
  };
  const nothingBanned = async (): Promise<void> => {
    expect(await f2b.client('get', 'sshd', 'banip')).toMatch(/^\s*$/);
    expect(await f2b.client('get', 'dovecot', 'banip')).toMatch(/^\s*$/);
    expect(await t.ctx.db.selectFrom('bans').selectAll().execute()).toEqual([]);
  };

  const refused: [string, RegExp][] = [
    ['127.0.0.1', /127\.0\.0\.0\/8 is loopback/],
    ['127.9.9.0/24', /127\.0\.0\.0\/8 is loopback/],
    ['::1', /::1 is loopback/],
    ['::ffff:127.0.0.1', /is loopback/],
    ['0.0.0.0', /unspecified/],
    ['192.0.2.200', /192\.0\.2\.200 is a trusted proxy \(MAILSVC_TRUSTED_PROXIES\)/],
    ['192.0.2.0/24', /192\.0\.2\.200 is a trusted proxy|is an address of this host/],
    ['2001:db8:bb::9', /2001:db8:bb::\/64 is a trusted proxy/],
    ['198.51.100.0/24', /198\.51\.100\.0\/25 is in fail2ban's ignoreip/],
    ['198.51.100.77', /198\.51\.100\.0\/25 is in fail2ban's ignoreip/],
    ['2001:db8:aa:1::/64', /2001:db8:aa::\/48 is in fail2ban's ignoreip/],
    [ADMIN_AT, /203\.0\.113\.50 is the address you are calling from/],
    ['203.0.113.0/24', /203\.0\.113\.50 is the address you are calling from/],
  ];

  it.each(refused)('POST /admin/bans %s from the administrator at 203.0.113.50 is refused, saying why', async (ip, why) => {
    const r = await banFrom(ADMIN_AT, ip);
    expect(r.status).toBe(422);
    expect(r.detail).toMatch(/^ip: cannot ban /);
    expect(r.detail).toMatch(why);
    await nothingBanned();
  });

  it.skipIf(!hostAddress)("the host's own address, and a network holding it, are refused", async () => {
    for (const ip of [hostAddress ?? '', `${(hostAddress ?? '').split('.').slice(0, 3).join('.')}.0/24`]) {
      const r = await banFrom(ADMIN_AT, ip);
      expect(r.status, ip).toBe(422);
      expect(r.detail).toMatch(/is an address of this host \(interface /);
    }
    await nothingBanned();
  });

  it('the same address is banned when another administrator asks (the refusal is about the caller, not the address)', async () => {
    const r = await banFrom('198.18.0.9', ADMIN_AT);
    expect(r.status, r.detail).toBe(201);
    expect((await f2b.client('banned', ADMIN_AT)).trim()).toBe("[['sshd', 'dovecot']]");
    await f2b.client('unban', '--all');
    await t.ctx.db.deleteFrom('bans').execute();
  });

  it("the CLI refuses the address of the SSH session it runs in (SSH_CLIENT, SSH_CONNECTION), exit 2, one line", async () => {
    for (const ssh of [{ SSH_CLIENT: '203.0.113.60 50022 22' }, { SSH_CONNECTION: '2001:db8:cc::5 50022 2001:db8::1 22' }] as Record<string, string>[]) {
      const ip = (Object.values(ssh)[0] ?? '').split(' ')[0] ?? '';
      const r = await runCli(['bans', 'ban', ip, 'test'], { env: { ...cliEnv, ...ssh } });
      expect(r.code, r.stderr).toBe(2);
      expect(r.stderr).toBe(`mailsvc: ip: cannot ban ${ip}: ${ip} is the address you are calling from (the ban would lock you out)\n`);
    }
    const loop = await runCli(['bans', 'ban', '127.0.0.2', 'test'], { env: cliEnv });
    expect(loop.code).toBe(2);
    expect(loop.stderr).toMatch(/is loopback/);
    expect(await f2b.client('get', 'sshd', 'banip')).toMatch(/^\s*$/);
    // Without an SSH session the same address is allowed.
    const ok = await runCli(['bans', 'ban', '203.0.113.60', 'test', '--json'], { env: cliEnv });
    expect(ok.code, ok.stderr).toBe(0);
  });
});
