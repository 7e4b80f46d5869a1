import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { DIALECTS, createTestDatabase, dialectAvailable } from '../../../test/helpers/dialects.js';
import type { TestDatabase } from '../../../test/helpers/dialects.js';
import { FakeClock, startTestApp } from '../../../test/helpers/app.js';
import type { TestApp } from '../../../test/helpers/app.js';
import { call, enableTotp, login, post } from '../../../test/helpers/flows.js';
import { oathtoolCode, oathtoolInstalled } from '../../../test/helpers/totp.js';
import { skipNotice } from '../../../test/helpers/services.js';

const haveOathtool = oathtoolInstalled();
if (!haveOathtool) skipNotice('oathtool (Debian package oathtool)', 'not on PATH');

// A fixed instant in the middle of a 30 s step, so ±1 step arithmetic is exact.
const T0 = Date.parse('2026-11-21T12:00:15Z');

for (const dialect of DIALECTS) {
  describe(`TOTP enrolment and sign-in (${dialect})`, async () => {
    const available = (await dialectAvailable(dialect)) && haveOathtool;
    let db: TestDatabase;
    let t: TestApp;
    let clock: FakeClock;
    beforeEach(async () => {
      if (!available) return;
      db = await createTestDatabase(dialect);
      clock = new FakeClock(T0);
      // The lockout has its own tests; here it must not cut in before the challenge's own cap.
      t = await startTestApp(db.url, { MAILSVC_API_AUTH_FAIL_LIMIT: '50' }, { clock });
    });
    /** Enrols two minutes before T0 (so the steps around T0 are unused), then returns to T0. */
    const enableEarlier = async (): Promise<string> => {
      clock.t = T0 - 120_000;
      const secret = await enableTotp(t, clock.t);
      clock.t = T0;
      return secret;
    };
    afterEach(async () => {
      await t?.close();
      await db?.drop();
    });

    it.skipIf(!available)('none → pending → enabled, with the states the status shows', async () => {
      const s0 = await call(t, 'GET', '/auth/mfa', t.basic());
      expect(s0.body).toEqual({
        totp_enabled: false, totp_pending: false, totp_confirmed_at: null, sms_enabled: false,
        sms_phone: null, sms_provider: null, methods: [], mfa_required: true, recovery_codes_remaining: 0, passkeys: 0,
      });
      const enroll = await call(t, 'POST', '/auth/mfa/totp/enroll', t.basic());
      expect(enroll.status).toBe(200);
      const secret = String(enroll.body.secret);
      expect(secret).toMatch(/^[A-Z2-7]{32}$/);
      expect(enroll.body.issuer).toBe('mailsvc');
      expect(enroll.body.provisioning_uri).toBe(
        `otpauth://totp/mailsvc:admin?issuer=mailsvc&secret=${secret}&algorithm=SHA1&digits=6&period=30`,
      );
      const pending = await call(t, 'GET', '/auth/mfa', t.basic());
      expect(pending.body).toMatchObject({ totp_enabled: false, totp_pending: true, totp_confirmed_at: null, methods: [] });

      const again = await call(t, 'POST', '/auth/mfa/totp/enroll', t.basic());
      expect(again.status).toBe(200);
      expect(again.body.secret).not.toBe(secret);
      // The replaced secret no longer confirms; the new one does.
      expect((await call(t, 'POST', '/auth/mfa/totp/confirm', t.basic(), { code: oathtoolCode(secret, T0) })).status).toBe(400);
      const ok = await call(t, 'POST', '/auth/mfa/totp/confirm', t.basic(), { code: oathtoolCode(String(again.body.secret), T0) });
      expect(ok.status).toBe(200);
      expect(ok.body).toMatchObject({ totp_enabled: true, totp_pending: false, totp_confirmed_at: new Date(T0).toISOString(), methods: ['totp'] });
    });

    it.skipIf(!available)('confirm before enrolment is 400 and a wrong code is 400, the state unchanged', async () => {
      const none = await call(t, 'POST', '/auth/mfa/totp/confirm', t.basic(), { code: '123456' });
      expect(none.status).toBe(400);
      expect(String(none.body.detail)).toMatch(/enrol/i);
      const secret = String((await call(t, 'POST', '/auth/mfa/totp/enroll', t.basic())).body.secret);
      const right = oathtoolCode(secret, T0);
      const wrong = right === '000000' ? '000001' : '000000';
      const bad = await call(t, 'POST', '/auth/mfa/totp/confirm', t.basic(), { code: wrong });
      expect(bad).toMatchObject({ status: 400, body: { detail: 'Invalid code' } });
      expect((await call(t, 'GET', '/auth/mfa', t.basic())).body).toMatchObject({ totp_enabled: false, totp_pending: true });
    });

    it.skipIf(!available)('enrol while enabled is 409 and changes nothing; DELETE erases the secret and is idempotent', async () => {
      const secret = await enableEarlier();
      const bearer = await (async () => {
        const c = await login(t);
        const v = await post(t, '/auth/mfa/verify', { challenge_id: c.body.challenge_id, method: 'totp', code: oathtoolCode(secret, T0) });
        return `Bearer ${String(v.body.access_token)}`;
      })();
      const conflict = await call(t, 'POST', '/auth/mfa/totp/enroll', bearer);
      expect(conflict.status).toBe(409);
      const row = await t.ctx.db.selectFrom('admin_mfa').selectAll().executeTakeFirstOrThrow();
      expect(row.totp_enabled).toBe(1);
      const sealed = row.totp_secret;
      expect(sealed).toMatch(/^v1\./);
      expect(sealed).not.toContain(secret);

      const del = await call(t, 'DELETE', '/auth/mfa/totp', bearer);
      expect(del.status).toBe(200);
      expect(del.body).toMatchObject({ totp_enabled: false, totp_pending: false, totp_confirmed_at: null, methods: [] });
      const after = await t.ctx.db.selectFrom('admin_mfa').selectAll().executeTakeFirstOrThrow();
      expect(after.totp_secret).toBeNull();
      // Nothing enrolled any more: the MFA-verified token still works on the setup paths.
      expect((await call(t, 'DELETE', '/auth/mfa/totp', bearer)).status).toBe(200);
    });

    it.skipIf(!available)('a code is accepted one step either side of now, not two', async () => {
      const secret = await enableEarlier();
      for (const [offset, ok] of [[-60_000, false], [-30_000, true], [30_000, true], [60_000, false]] as const) {
        const c = await login(t);
        const r = await post(t, '/auth/mfa/verify', { challenge_id: c.body.challenge_id, method: 'totp', code: oathtoolCode(secret, T0 + offset) });
        expect(r.status, `offset ${offset}`).toBe(ok ? 200 : 401);
      }
    });

    it.skipIf(!available)('a TOTP code cannot be replayed, not even on a new challenge', async () => {
      const secret = await enableEarlier();
      const code = oathtoolCode(secret, T0);
      const c1 = await login(t);
      expect((await post(t, '/auth/mfa/verify', { challenge_id: c1.body.challenge_id, method: 'totp', code })).status).toBe(200);
      const c2 = await login(t);
      const replay = await post(t, '/auth/mfa/verify', { challenge_id: c2.body.challenge_id, method: 'totp', code });
      expect(replay).toMatchObject({ status: 401, body: { detail: 'Invalid code' } });
      // An older step is refused too, once a newer one was used.
      const older = await post(t, '/auth/mfa/verify', { challenge_id: c2.body.challenge_id, method: 'totp', code: oathtoolCode(secret, T0 - 30_000) });
      expect(older.status).toBe(401);
      clock.advance(30_000);
      const next = await post(t, '/auth/mfa/verify', { challenge_id: c2.body.challenge_id, method: 'totp', code: oathtoolCode(secret, T0 + 30_000) });
      expect(next.status).toBe(200);
      expect(next.body.mfa_verified).toBe(true);
    });

    it.skipIf(!available)('a challenge is single-use, expires, and dies after 5 wrong codes', async () => {
      const secret = await enableEarlier();
      const c = await login(t);
      const ok = await post(t, '/auth/mfa/verify', { challenge_id: c.body.challenge_id, method: 'totp', code: oathtoolCode(secret, T0) });
      expect(ok.status).toBe(200);
      clock.advance(30_000);
      const reuse = await post(t, '/auth/mfa/verify', { challenge_id: c.body.challenge_id, method: 'totp', code: oathtoolCode(secret, clock.t) });
      expect(reuse).toMatchObject({ status: 401, body: { detail: 'Invalid or expired challenge' } });

      const c2 = await login(t);
      for (let i = 0; i < 5; i += 1) {
        const r = await post(t, '/auth/mfa/verify', { challenge_id: c2.body.challenge_id, method: 'totp', code: 'abcdef' });
        expect(r.body.detail).toBe('Invalid code');
      }
      const dead = await post(t, '/auth/mfa/verify', { challenge_id: c2.body.challenge_id, method: 'totp', code: oathtoolCode(secret, clock.t) });
      expect(dead.body.detail).toBe('Invalid or expired challenge');
    });

    it.skipIf(!available)('a challenge lives MAILSVC_MFA_CHALLENGE_TTL seconds', async () => {
      const secret = await enableEarlier();
      const c = await login(t);
      expect(c.body.expires_in).toBe(300);
      clock.advance(301_000);
      const r = await post(t, '/auth/mfa/verify', { challenge_id: c.body.challenge_id, method: 'totp', code: oathtoolCode(secret, clock.t) });
      expect(r).toMatchObject({ status: 401, body: { detail: 'Invalid or expired challenge' } });
    });

    it.skipIf(!available)('a method the challenge does not offer is 400; an unknown method is 422', async () => {
      await enableEarlier();
      const c = await login(t);
      const sms = await post(t, '/auth/mfa/verify', { challenge_id: c.body.challenge_id, method: 'sms', code: '123456' });
      expect(sms.status).toBe(400);
      const unknown = await post(t, '/auth/mfa/verify', { challenge_id: c.body.challenge_id, method: 'email', code: '123456' });
      expect(unknown.status).toBe(422);
      expect(unknown.body.errors).toEqual(expect.arrayContaining([expect.objectContaining({ path: 'body.method' })]));
    });
  });
}
