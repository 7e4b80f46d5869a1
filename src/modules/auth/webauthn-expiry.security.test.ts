import { readFileSync } from 'node:fs';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createTestDatabase } from '../../../test/helpers/dialects.js';
import type { TestDatabase } from '../../../test/helpers/dialects.js';
import { FakeClock, startTestApp } from '../../../test/helpers/app.js';
import type { TestApp } from '../../../test/helpers/app.js';
import { call, enableTotp, login, post, signInWithTotp } from '../../../test/helpers/flows.js';
import { isolatedRedisUrl, redisAvailable } from '../../../test/helpers/redis.js';
import { SoftAuthenticator } from '../../../test/helpers/soft-authenticator.js';

// Every WebAuthn challenge — the second factor of a sign-in, a registration,
// a passwordless sign-in — is accepted for MAILSVC_WEBAUTHN_TIMEOUT seconds
// after its options, as `expires_in` says, and no longer: not for the rest of
// the sign-in challenge it is kept with (MAILSVC_MFA_CHALLENGE_TTL, 300 s).

const ORIGIN = 'https://mail.example.org';
const TIMEOUT_S = 30;
// The middle of a 30 s TOTP step.
const T0 = Date.parse('2026-11-21T12:00:15Z');
const REDIS = isolatedRedisUrl(10);
const haveRedis = await redisAvailable();
type Json = Record<string, unknown>;

for (const store of ['memory', 'redis'] as const) {
  describe.skipIf(store === 'redis' && !haveRedis)(`a WebAuthn challenge expires with its own timeout (${store} challenge store)`, () => {
    let db: TestDatabase;
    let t: TestApp;
    let clock: FakeClock;
    let bearer: string;
    let key: SoftAuthenticator;

    beforeEach(async () => {
      db = await createTestDatabase('sqlite');
      clock = new FakeClock(T0 - 120_000);
      const env: Record<string, string> = { MAILSVC_PANEL_ORIGIN: ORIGIN, MAILSVC_WEBAUTHN_TIMEOUT: String(TIMEOUT_S), MAILSVC_API_AUTH_FAIL_LIMIT: '50' };
      if (store === 'redis') env.MAILSVC_REDIS_URL = REDIS;
      t = await startTestApp(db.url, env, { clock });
      const secret = await enableTotp(t, clock.t);
      clock.t = T0;
      bearer = await signInWithTotp(t, secret, clock.t);
      key = new SoftAuthenticator(ORIGIN);
    });
    afterEach(async () => {
      await t?.close();
      await db?.drop();
    });

    const registrationOptions = async (): Promise<Json> => {
      const r = await call(t, 'POST', '/auth/mfa/passkeys/options', bearer);
      expect(r.status).toBe(200);
      expect(r.body.expires_in).toBe(TIMEOUT_S);
      return r.body;
    };
    const register = async (): Promise<void> => {
      const options = await registrationOptions();
      const r = await call(t, 'POST', '/auth/mfa/passkeys', bearer, { registration_id: options.registration_id, name: 'soft key', credential: key.register(options.options as Json) });
      expect(r.status).toBe(201);
    };
    const authLogLines = (): number => {
      try {
        return readFileSync(t.settings.authLog, 'utf8').split('\n').filter((l) => l.includes('authentication failure')).length;
      } catch {
        return 0;
      }
    };

    it('registration: an answer after the timeout is refused and stores nothing; within it, the passkey is registered', async () => {
      const options = await registrationOptions();
      clock.advance((TIMEOUT_S + 1) * 1000);
      const late = await call(t, 'POST', '/auth/mfa/passkeys', bearer, { registration_id: options.registration_id, name: 'late', credential: key.register(options.options as Json) });
      expect(late.status).toBe(400);
      expect(await t.ctx.db.selectFrom('admin_passkeys').selectAll().execute()).toHaveLength(0);
      const again = await registrationOptions();
      clock.advance((TIMEOUT_S - 1) * 1000);
      const inTime = await call(t, 'POST', '/auth/mfa/passkeys', bearer, { registration_id: again.registration_id, name: 'in time', credential: key.register(again.options as Json) });
      expect(inTime.status).toBe(201);
    });

    it('sign-in: a passkey answer 33 s after its options is refused (and counted) though the sign-in challenge lives on', async () => {
      await register();
      const challenge = await login(t);
      expect(challenge.body.methods).toContain('webauthn');
      const id = challenge.body.challenge_id;
      const options = await post(t, '/auth/mfa/webauthn/options', { challenge_id: id });
      expect(options.status).toBe(200);
      expect(options.body.expires_in).toBe(TIMEOUT_S);
      clock.advance(33_000);
      const failuresBefore = authLogLines();
      const late = await post(t, '/auth/mfa/webauthn/verify', { challenge_id: id, credential: key.assert(options.body.options as Json) });
      expect(late.status).toBe(401);
      expect(late.body.access_token).toBeUndefined();
      expect(authLogLines()).toBe(failuresBefore + 1);
      // The sign-in challenge (300 s) is still there: new options, answered in time, sign in.
      const fresh = await post(t, '/auth/mfa/webauthn/options', { challenge_id: id });
      expect(fresh.status).toBe(200);
      clock.advance((TIMEOUT_S - 1) * 1000);
      const inTime = await post(t, '/auth/mfa/webauthn/verify', { challenge_id: id, credential: key.assert(fresh.body.options as Json) });
      expect(inTime.status).toBe(200);
      expect(inTime.body.mfa_verified).toBe(true);
    });

    it('sign-in: the WebAuthn challenge never outlives its sign-in challenge either', async () => {
      await register();
      const challenge = await login(t);
      const id = challenge.body.challenge_id;
      // Ask for the options 290 s into the 300 s sign-in challenge: 10 s are left, not 30.
      clock.advance(290_000);
      const options = await post(t, '/auth/mfa/webauthn/options', { challenge_id: id });
      expect(options.status).toBe(200);
      expect(options.body.expires_in).toBeLessThanOrEqual(10);
      clock.advance(11_000);
      const late = await post(t, '/auth/mfa/webauthn/verify', { challenge_id: id, credential: key.assert(options.body.options as Json) });
      expect(late.status).toBe(401);
    });

    it('passwordless: an assertion after the timeout is refused; within it, it signs in', async () => {
      await register();
      expect((await call(t, 'PATCH', '/auth/mfa/passkeys/policy', bearer, { passwordless: true })).status).toBe(200);
      const options = await post(t, '/auth/passkey/options', {});
      expect(options.status).toBe(200);
      expect(options.body.expires_in).toBe(TIMEOUT_S);
      clock.advance((TIMEOUT_S + 3) * 1000);
      const late = await post(t, '/auth/passkey/verify', { challenge_id: options.body.challenge_id, credential: key.assert(options.body.options as Json) });
      expect(late.status).toBe(401);
      const again = await post(t, '/auth/passkey/options', {});
      clock.advance((TIMEOUT_S - 1) * 1000);
      const inTime = await post(t, '/auth/passkey/verify', { challenge_id: again.body.challenge_id, credential: key.assert(again.body.options as Json) });
      expect(inTime.status).toBe(200);
      expect(inTime.body.mfa_verified).toBe(true);
    });
  });
}
