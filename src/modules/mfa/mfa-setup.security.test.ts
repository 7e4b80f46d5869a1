import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { DIALECTS, createTestDatabase, dialectAvailable } from '../../../test/helpers/dialects.js';
import type { TestDatabase } from '../../../test/helpers/dialects.js';
import { startTestApp } from '../../../test/helpers/app.js';
import type { TestApp } from '../../../test/helpers/app.js';
import { call, enableTotp, login, signInWithTotp } from '../../../test/helpers/flows.js';
import { oathtoolInstalled, previousStepCode } from '../../../test/helpers/totp.js';
import { skipNotice } from '../../../test/helpers/services.js';

/**
 * Finding 4 of the security review: a token issued without a second factor
 * (while MFA was not required, or before enrolment) must not be able to
 * replace the factor once one is enrolled and MFA is required.
 */
const haveOathtool = oathtoolInstalled();
if (!haveOathtool) skipNotice('oathtool (Debian package oathtool)', 'not on PATH');

const SMS_ENV = { MAILSVC_SMS_PROVIDER_A_API_KEY: 'test-key' };

for (const dialect of DIALECTS) {
  describe(`the /auth/mfa setup paths and tokens without a second factor (${dialect})`, async () => {
    const available = (await dialectAvailable(dialect)) && haveOathtool;
    let db: TestDatabase;
    let t: TestApp | undefined;
    beforeEach(async () => {
      if (available) db = await createTestDatabase(dialect);
    });
    afterEach(async () => {
      await t?.close();
      t = undefined;
      await db?.drop();
    });
    const reopen = async (env: Record<string, string>): Promise<TestApp> => {
      await t?.close();
      t = await startTestApp(db.url, { ...SMS_ENV, ...env });
      return t;
    };

    it.skipIf(!available)('the attack: a password-only token kept from before enrolment cannot change SMS, delete or re-enrol TOTP', async () => {
      // MFA not required: the password alone gives a token (mfa_verified false).
      let app = await reopen({ MAILSVC_MFA_REQUIRED: 'no' });
      const r = await login(app);
      expect(r.body.mfa_verified).toBe(false);
      const stolen = `Bearer ${String(r.body.access_token)}`;
      // The administrator enrols TOTP, and MFA is required again.
      await enableTotp(app);
      app = await reopen({ MAILSVC_MFA_REQUIRED: 'yes' });
      for (const [method, url, body] of [
        ['PATCH', '/auth/mfa/sms', { phone: '+4930123456789', enabled: true }],
        ['DELETE', '/auth/mfa/totp', undefined],
        ['POST', '/auth/mfa/totp/enroll', undefined],
        ['POST', '/auth/mfa/totp/confirm', { code: '123456' }],
        ['GET', '/auth/mfa', undefined],
      ] as const) {
        const res = await call(app, method, url, stolen, body);
        expect(res.status, `${method} ${url}`).toBe(401);
      }
      const row = await app.ctx.db.selectFrom('admin_mfa').selectAll().executeTakeFirstOrThrow();
      expect(row).toMatchObject({ totp_enabled: 1, sms_enabled: 0, sms_phone: null });
    });

    it.skipIf(!available)('a password-only token is refused on the setup paths once a factor is enrolled, like Basic', async () => {
      const app = await reopen({});
      const secret = await enableTotp(app);
      // A token issued without a second factor before this rule existed.
      const old = `Bearer ${(await app.ctx.tokens.issue('admin', false)).access_token}`;
      for (const auth of [old, app.basic()]) {
        const res = await call(app, 'DELETE', '/auth/mfa/totp', auth);
        expect(res).toMatchObject({ status: 401, body: { detail: expect.stringMatching(/^Bearer token required/) } });
        expect((await call(app, 'GET', '/auth/mfa', auth)).status).toBe(401);
      }
      expect((await app.ctx.db.selectFrom('admin_mfa').select('totp_enabled').executeTakeFirstOrThrow()).totp_enabled).toBe(1);
      // An MFA-verified token may change the factors.
      expect((await call(app, 'DELETE', '/auth/mfa/totp', await signInWithTotp(app, secret))).status).toBe(200);
    });

    it.skipIf(!available)('before any factor is enrolled, a password-only token may still enrol (setup paths only)', async () => {
      const app = await reopen({});
      const token = `Bearer ${(await app.ctx.tokens.issue('admin', false)).access_token}`;
      expect((await call(app, 'GET', '/auth/mfa', token)).status).toBe(200);
      expect((await call(app, 'GET', '/health/details', token)).status).toBe(403);
      expect((await call(app, 'POST', '/auth/mfa/totp/enroll', token)).status).toBe(200);
    });

    it.skipIf(!available)('confirming TOTP revokes every token issued without a second factor, and only those', async () => {
      const app = await reopen({ MAILSVC_MFA_REQUIRED: 'no' });
      const a = `Bearer ${String((await login(app)).body.access_token)}`;
      const b = `Bearer ${String((await login(app)).body.access_token)}`;
      expect((await call(app, 'GET', '/health/details', a)).status).toBe(200);
      const enroll = await call(app, 'POST', '/auth/mfa/totp/enroll', a);
      const secret = String(enroll.body.secret);
      const confirm = await call(app, 'POST', '/auth/mfa/totp/confirm', a, { code: (await previousStepCode(secret)) });
      expect(confirm.status).toBe(200);
      // Both are gone, even while MFA is not required: a password-only token never outlives enrolment.
      expect((await call(app, 'GET', '/health/details', a)).status).toBe(401);
      expect((await call(app, 'GET', '/health/details', b)).status).toBe(401);
      const rows = await app.ctx.db.selectFrom('access_tokens').select(['mfa_verified', 'revoked_at']).execute();
      expect(rows.every((r) => r.mfa_verified === 0 && r.revoked_at !== null)).toBe(true);
      // A token earned with the factor works, and survives a later enrolment of SMS.
      const verified = await signInWithTotp(app, secret);
      expect((await call(app, 'PATCH', '/auth/mfa/sms', verified, { phone: '+4930123456789', enabled: true })).status).toBe(200);
      expect((await call(app, 'GET', '/health/details', verified)).status).toBe(200);
    });

    it.skipIf(!available)('enabling SMS OTP revokes the tokens issued without a second factor', async () => {
      const app = await reopen({ MAILSVC_MFA_REQUIRED: 'no' });
      const a = `Bearer ${String((await login(app)).body.access_token)}`;
      expect((await call(app, 'PATCH', '/auth/mfa/sms', a, { phone: '+4930123456789' })).status).toBe(200);
      // Storing a phone enrols nothing: the token still works.
      expect((await call(app, 'GET', '/health/details', a)).status).toBe(200);
      expect((await call(app, 'PATCH', '/auth/mfa/sms', a, { enabled: true })).status).toBe(200);
      expect((await call(app, 'GET', '/health/details', a)).status).toBe(401);
    });
  });
}
