import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { readFileSync, existsSync } from 'node:fs';
import { createTestDatabase } from '../../test/helpers/dialects.js';
import type { TestDatabase } from '../../test/helpers/dialects.js';
import { startTestApp } from '../../test/helpers/app.js';
import type { TestApp } from '../../test/helpers/app.js';
import { canonicalIp } from './client-ip.js';

/**
 * Behind a trusted proxy the client address comes from X-Forwarded-For. Every
 * spelling of one address must be one lockout key and one auth-log address
 * (fail2ban bans what it reads there); what is not an address is not used.
 */
describe('client address from a trusted proxy: canonical, or the socket address', () => {
  let db: TestDatabase;
  let t: TestApp;
  beforeEach(async () => {
    db = await createTestDatabase('sqlite');
    t = await startTestApp(db.url, { MAILSVC_MFA_REQUIRED: 'no', MAILSVC_TRUSTED_PROXIES: '10.0.0.0/8', MAILSVC_API_AUTH_FAIL_LIMIT: '3' });
  });
  afterEach(async () => {
    await t?.close();
    await db?.drop();
  });
  const wrongLogin = (xff: string) =>
    t.app.inject({ method: 'POST', url: '/auth/login', remoteAddress: '10.0.0.1', headers: { 'x-forwarded-for': xff }, payload: { username: 'admin', password: 'wrong' } });
  const logged = (): string[] => (existsSync(t.settings.authLog) ? readFileSync(t.settings.authLog, 'utf8').trim().split('\n').map((l) => l.replace(/^.* from /, '')) : []);

  it('IPv4-mapped IPv6 spellings of 1.1.1.7 are one lockout key and are logged as 1.1.1.7', async () => {
    const statuses: number[] = [];
    for (const xff of ['::ffff:1.1.1.7', '::FFFF:101:107', '0:0:0:0:0:ffff:1.1.1.7', '1.1.1.7']) statuses.push((await wrongLogin(xff)).statusCode);
    expect(statuses).toEqual([401, 401, 401, 429]);
    expect(logged()).toEqual(['1.1.1.7', '1.1.1.7', '1.1.1.7']);
  });

  it('IPv6 is logged in its RFC 5952 form; a zone id is dropped', async () => {
    for (const xff of ['2001:0DB8:0:0:0:0:0:0001', '2001:db8::1', 'fe80::1%eth0']) expect((await wrongLogin(xff)).statusCode).toBe(401);
    expect(logged()).toEqual(['2001:db8::1', '2001:db8::1', 'fe80::1']);
  });

  it('decimal, hex, octal and short IPv4 forms and junk are not addresses: the proxy address is used, with one warning', async () => {
    const statuses: number[] = [];
    for (const xff of ['2130706433', '0x01.1', '010.1.1.1', '1.1.7', 'junk']) statuses.push((await wrongLogin(xff)).statusCode);
    // All five count for the proxy's own address: the fourth finds the limit reached.
    expect(statuses).toEqual([401, 401, 401, 429, 429]);
    expect(logged()).toEqual(['10.0.0.1', '10.0.0.1', '10.0.0.1']);
    expect(t.logs.filter((l) => l.includes('X-Forwarded-For from a trusted proxy holds no valid address'))).toHaveLength(1);
  });

  it('without trusted proxies the socket address counts, canonical too', async () => {
    const plain = await startTestApp(db.url, { MAILSVC_MFA_REQUIRED: 'no' });
    try {
      await plain.app.inject({ method: 'POST', url: '/auth/login', remoteAddress: '::ffff:192.0.2.5', headers: { 'x-forwarded-for': '1.1.1.7' }, payload: { username: 'admin', password: 'wrong' } });
      expect(readFileSync(plain.settings.authLog, 'utf8')).toMatch(/ from 192\.0\.2\.5\n$/);
    } finally {
      await plain.close();
    }
  });

  it('canonicalIp', () => {
    expect(canonicalIp('::1.2.3.4')).toBe('::102:304');
    expect(canonicalIp(' 192.0.2.1 ')).toBe('192.0.2.1');
    expect(canonicalIp('::ffff:7f00:1')).toBe('127.0.0.1');
    for (const bad of ['', '1.2.3.256', '1.2.3.4.5', '[::1]', '::1/128', 'fe80::1%', '0x7f000001', '127.1']) expect(canonicalIp(bad), bad).toBeNull();
  });
});
