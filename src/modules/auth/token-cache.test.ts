import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createTestDatabase } from '../../../test/helpers/dialects.js';
import type { TestDatabase } from '../../../test/helpers/dialects.js';
import { startTestApp } from '../../../test/helpers/app.js';
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
    expect(await eventually(async () => (await call(t, 'GET', '/auth/mfa', bearer)).status === 401)).toBe(true);
    const fresh = await t.ctx.tokens.issue('admin', true);
    const status = await call(t, 'GET', '/auth/mfa', `Bearer ${fresh.access_token}`);
    expect(status.body).toMatchObject({ totp_enabled: false, methods: [], recovery_codes_remaining: 0 });
  });
});
