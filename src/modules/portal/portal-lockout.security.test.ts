import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase } from '../../../test/helpers/dialects.js';
import type { TestDatabase } from '../../../test/helpers/dialects.js';
import { startTestApp } from '../../../test/helpers/app.js';
import type { TestApp } from '../../../test/helpers/app.js';
import { portalSignIn, signInRequest } from '../../../test/helpers/portal.js';
import type { PortalClient } from '../../../test/helpers/portal.js';
import { isolatedRedisUrl, redisAvailable } from '../../../test/helpers/redis.js';
import { oathtoolCode } from '../../../test/helpers/totp.js';

// The portal's lockouts count one mailbox under one key whatever the spelling
// of its address, and count the secrets typed inside a session (the current
// password, TOTP codes) like sign-in guesses: logged for fail2ban, and the
// session ends after three wrong answers.
const LIMIT = 3;
const ALICE = 'alice@example.org';

/** Spellings sign-in reads as alice@example.org (normalizeAddress): each must count against her one lockout. */
const SPELLINGS = [
  'ALICE@Example.ORG',
  'alice@example.org.',
  'alice@  example.org',
  'alice@\u00a0example.org',
  'alice@\u2003example.org',
  '\ufeffalice@example.org',
  ' alice@example.org ',
  'Alice@EXAMPLE.org.',
];

/** A six-digit code that is none of the codes valid around now (one step of drift, and a step of test time). */
function wrongCode(secret: string): string {
  const near = new Set([-30_000, 0, 30_000, 60_000].map((d) => oathtoolCode(secret, Date.now() + d)));
  for (let n = 0; ; n += 1) {
    const c = String(n).padStart(6, '0');
    if (!near.has(c)) return c;
  }
}

const stores = [
  { store: 'memory', redis: async () => ({}) },
  {
    store: 'redis',
    redis: async (): Promise<Record<string, string> | null> => {
      if (!(await redisAvailable())) return null;
      const url = isolatedRedisUrl(12);
      const { Redis } = await import('ioredis');
      const r = new Redis(url);
      // Database 12 is leased to this file: the counters of an earlier run (blocks of 900 s) go.
      await r.flushdb();
      r.disconnect();
      return { MAILSVC_REDIS_URL: url };
    },
  },
] as const;

for (const { store, redis } of stores) {
  describe(`portal lockout keys on the canonical address (${store})`, { timeout: 120_000 }, () => {
    let db: TestDatabase;
    let t: TestApp | undefined;

    beforeAll(async () => {
      const env = await redis();
      if (env === null) return;
      db = await createTestDatabase('sqlite');
      t = await startTestApp(db.url, { MAILSVC_MFA_REQUIRED: 'no', MAILSVC_ENABLE_USER_PORTAL: 'yes', MAILSVC_API_AUTH_FAIL_LIMIT: String(LIMIT), ...env });
      await t.ctx.domains.create('example.org');
      await t.ctx.accounts.create({ address: ALICE, password: 'alice-mailbox-pw' });
    });
    afterAll(async () => {
      await t?.close();
      await db?.drop();
    });

    it('every spelling of one mailbox shares its lockout: once locked, the right password is refused under each of them', async (c) => {
      if (!t) return c.skip();
      const app = t.app;
      // Each spelling reaches Alice's mailbox (so each would be a way around a per-spelling lockout).
      for (const [i, spelling] of SPELLINGS.entries()) {
        expect((await signInRequest(app, { address: spelling, password: 'alice-mailbox-pw' }, `10.20.0.${i + 1}`)).statusCode, JSON.stringify(spelling)).toBe(200);
      }
      // LIMIT wrong passwords, each under another spelling and from another client address.
      for (const [i, spelling] of SPELLINGS.slice(0, LIMIT).entries()) {
        expect((await signInRequest(app, { address: spelling, password: 'wrong-guess' }, `10.21.0.${i + 1}`)).statusCode).toBe(401);
      }
      // Locked: the right password under every spelling, the canonical one too, from fresh addresses.
      for (const [i, spelling] of [...SPELLINGS, ALICE].entries()) {
        expect((await signInRequest(app, { address: spelling, password: 'alice-mailbox-pw' }, `10.22.0.${i + 1}`)).statusCode, JSON.stringify(spelling)).toBe(429);
      }
      // fail2ban reads the canonical address, whatever was typed.
      const lines = readFileSync(t.settings.authLog, 'utf8').split('\n').filter((l) => l.includes(' from 10.21.0.'));
      expect(lines).toHaveLength(LIMIT);
      for (const l of lines) expect(l).toMatch(/mailsvc-portal: authentication failure for alice@example\.org from 10\.21\.0\.\d$/);
    });
  });
}

describe('secrets typed inside a portal session count like sign-in guesses', { timeout: 120_000 }, () => {
  let db: TestDatabase;
  let t: TestApp;
  const users = { carol: 'carol@example.org', dave: 'dave@example.org', erin: 'erin@example.org' };
  const PW = 'mailbox-password-1';

  beforeAll(async () => {
    db = await createTestDatabase('sqlite');
    t = await startTestApp(db.url, { MAILSVC_MFA_REQUIRED: 'no', MAILSVC_ENABLE_USER_PORTAL: 'yes', MAILSVC_API_AUTH_FAIL_LIMIT: String(LIMIT) });
    await t.ctx.domains.create('example.org');
    for (const address of Object.values(users)) await t.ctx.accounts.create({ address, password: PW });
  });
  afterAll(async () => {
    await t?.close();
    await db?.drop();
  });

  /** Three wrong answers through `wrong` from `ip`: two keep the session, the third ends it; each is an auth-log line; the mailbox is then locked. */
  async function threeWrong(client: PortalClient, address: string, ip: string, wrong: () => Promise<number>, wrongStatus: number): Promise<void> {
    expect(await wrong()).toBe(wrongStatus);
    expect(await wrong()).toBe(wrongStatus);
    expect((await client.call('GET', 'me')).statusCode).toBe(200);
    expect(await wrong()).toBe(401);
    expect((await client.call('GET', 'me')).statusCode).toBe(401);
    const lines = readFileSync(t.settings.authLog, 'utf8').split('\n').filter((l) => l.endsWith(` from ${ip}`));
    expect(lines).toHaveLength(LIMIT);
    for (const l of lines) expect(l).toMatch(new RegExp(`^\\S+Z mailsvc-portal: authentication failure for ${address.replace('.', '\\.')} from ${ip.replace(/\./g, '\\.')}$`));
    // Counted in the mailbox's lockout: the right password from elsewhere is refused now.
    expect((await signInRequest(t.app, { address, password: PW }, '10.39.0.1')).statusCode).toBe(429);
  }

  it('a wrong current password on a password change: counted, logged, the session ends at the third', async () => {
    const carol = await portalSignIn(t.app, users.carol, PW);
    const ip = '10.31.0.1';
    await threeWrong(carol, users.carol, ip, async () => (await carol.call('POST', 'password', { current_password: 'not-the-password', new_password: 'carol-new-password' }, { ip })).statusCode, 403);
    expect((await t.ctx.mailAuth.check({ user: users.carol, password: PW, protocol: 'imap', remoteIp: '127.0.0.1' })).ok).toBe(true);
  });

  it('wrong codes to confirm TOTP: counted, logged, the session ends at the third', async () => {
    const dave = await portalSignIn(t.app, users.dave, PW);
    const ip = '10.32.0.1';
    const { secret } = (await dave.call('POST', 'totp')).json<{ secret: string }>();
    await threeWrong(dave, users.dave, ip, async () => (await dave.call('POST', 'totp/confirm', { code: wrongCode(secret) }, { ip })).statusCode, 400);
  });

  it('wrong codes to switch TOTP off: counted, logged, the session ends at the third, TOTP stays on', async () => {
    const erin = await portalSignIn(t.app, users.erin, PW);
    const ip = '10.33.0.1';
    const { secret } = (await erin.call('POST', 'totp')).json<{ secret: string }>();
    expect((await erin.call('POST', 'totp/confirm', { code: oathtoolCode(secret) })).statusCode).toBe(204);
    await threeWrong(erin, users.erin, ip, async () => (await erin.call('POST', 'totp/disable', { code: wrongCode(secret) }, { ip })).statusCode, 400);
    const { id } = await t.ctx.accounts.get(users.erin);
    expect(await t.ctx.db.selectFrom('portal_totp').select('confirmed').where('account_id', '=', id).execute()).toEqual([{ confirmed: 1 }]);
  });
});
