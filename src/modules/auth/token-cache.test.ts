import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { REDIS_URL, createTestDatabase, dialectAvailable } from '../../../test/helpers/dialects.js';
import type { TestDatabase } from '../../../test/helpers/dialects.js';
import type { DialectName } from '../../db/dialect.js';
import { FakeClock, startTestApp } from '../../../test/helpers/app.js';
import { TokenRepository } from './token.repository.js';
import type { TestApp } from '../../../test/helpers/app.js';
import { call, enableTotp, login } from '../../../test/helpers/flows.js';
import { createContext } from '../../../test/helpers/context.js';

/** Waits until `check` holds, up to `ms` (generous: a busy 2-core machine); the change signal is inotify, so not synchronous. */
async function eventually(check: () => Promise<boolean>, ms = 20_000): Promise<boolean> {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (await check()) return true;
    await new Promise((r) => setTimeout(r, 20));
  }
  return check();
}

// The running service keeps tokens and the MFA record in memory; these tests
// make sure nothing it caches outlives a change made elsewhere.
describe('in-process caches of tokens and the MFA record', { timeout: 60_000 }, () => {
  let db: TestDatabase;
  let t: TestApp;
  beforeEach(async () => {
    db = await createTestDatabase('sqlite');
    t = await startTestApp(db.url, { MAILSVC_MFA_REQUIRED: 'no' });
  });
  afterEach(async () => {
    await t.close();
    await db.drop();
  });

  it('a cached token is refused right after logout on the same instance', async () => {
    const token = `Bearer ${String((await login(t)).body.access_token)}`;
    expect((await call(t, 'GET', '/auth/mfa', token)).status).toBe(200);
    await t.app.inject({ method: 'POST', url: '/auth/logout', headers: { authorization: token } });
    expect((await call(t, 'GET', '/auth/mfa', token)).status).toBe(401);
  });

  it('`admin mfa reset` in another process revokes the cached tokens and the cached MFA record of the running service', async () => {
    await enableTotp(t);
    // An MFA-verified token the service has cached.
    const issued = await t.ctx.tokens.issue('admin', true);
    const bearer = `Bearer ${issued.access_token}`;
    expect((await call(t, 'GET', '/auth/mfa', bearer)).body).toMatchObject({ methods: ['totp'], recovery_codes_remaining: 10 });

    // What `mailsvc admin mfa reset` does, from a context of its own (another process's view).
    const cli = await createContext(t.settings, { migrate: false });
    try {
      await cli.mfa.resetAll();
      await cli.tokens.revokeAll();
      cli.changes.notify();
    } finally {
      await cli.close();
    }
    // The tokens at once (the revocation counter in the database), the MFA record once the change signal arrives.
    expect((await call(t, 'GET', '/auth/mfa', bearer)).status).toBe(401);
    const fresh = `Bearer ${(await t.ctx.tokens.issue('admin', true)).access_token}`;
    expect(await eventually(async () => (await call(t, 'GET', '/auth/mfa', fresh)).body.totp_enabled === false)).toBe(true);
    expect((await call(t, 'GET', '/auth/mfa', fresh)).body).toMatchObject({ totp_enabled: false, methods: [], recovery_codes_remaining: 0 });
  });
});

/**
 * Two instances of the service on one database, each with its own data
 * directory (so no change signal between them, as on two hosts): a token the
 * first instance holds in its cache is refused there from the very next
 * request after the second revoked it, however it was revoked.
 */
const SHARED: { dialect: DialectName; redis: boolean }[] = [
  { dialect: 'sqlite', redis: false },
  { dialect: 'postgres', redis: false },
  { dialect: 'mysql', redis: false },
  { dialect: 'sqlite', redis: true },
];
for (const { dialect, redis } of SHARED) {
  describe(`the token cache across instances sharing the database (${dialect}${redis ? ', Redis' : ''})`, { timeout: 60_000 }, async () => {
    const available = await dialectAvailable(dialect);
    let db: TestDatabase;
    let a: TestApp;
    let b: TestApp;
    let clock: FakeClock;
    beforeEach(async () => {
      if (!available) return;
      db = await createTestDatabase(dialect);
      clock = new FakeClock();
      const env = { MAILSVC_MFA_REQUIRED: 'no', ...(redis ? { MAILSVC_REDIS_URL: REDIS_URL } : {}) };
      a = await startTestApp(db.url, env, { clock });
      b = await startTestApp(db.url, env);
    });
    afterEach(async () => {
      vi.restoreAllMocks();
      await a?.close();
      await b?.close();
      await db?.drop();
    });

    /** A token A has checked once, so it is in A's cache; A's later checks do not read its row. */
    async function cachedOnA(): Promise<string> {
      const bearer = `Bearer ${String((await login(a)).body.access_token)}`;
      expect((await call(a, 'GET', '/auth/mfa', bearer)).status).toBe(200);
      const reads = vi.spyOn(TokenRepository.prototype, 'findById');
      expect((await call(a, 'GET', '/auth/mfa', bearer)).status).toBe(200);
      expect(reads).not.toHaveBeenCalled();
      reads.mockRestore();
      return bearer;
    }

    it.skipIf(!available)('logout on the other instance', async () => {
      const bearer = await cachedOnA();
      expect((await b.app.inject({ method: 'POST', url: '/auth/logout', headers: { authorization: bearer } })).statusCode).toBeLessThan(300);
      expect((await call(a, 'GET', '/auth/mfa', bearer)).status).toBe(401);
    });

    // Not on Redis: there this writes a mark that every test sharing that Redis would see; the other cases cover Redis.
    if (!redis) it.skipIf(!available)('every token revoked by the other instance (a password change, `admin mfa reset`)', async () => {
      const bearer = await cachedOnA();
      expect(await b.ctx.tokens.revokeAll()).toBeGreaterThan(0);
      expect((await call(a, 'GET', '/auth/mfa', bearer)).status).toBe(401);
    });

    it.skipIf(!available)('the tokens without a second factor, revoked when the other instance enrols one', async () => {
      const bearer = await cachedOnA();
      expect(await b.ctx.tokens.revokeUnverified()).toBeGreaterThan(0);
      expect((await call(a, 'GET', '/auth/mfa', bearer)).status).toBe(401);
    });

    it.skipIf(!available)('a cached token past its expiry', async () => {
      const bearer = await cachedOnA();
      clock.advance(a.settings.accessTokenTtl * 1000);
      expect((await call(a, 'GET', '/auth/mfa', bearer)).status).toBe(401);
    });
  });
}
