import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import { DIALECTS, createTestDatabase, dialectAvailable } from '../../../test/helpers/dialects.js';
import type { TestDatabase } from '../../../test/helpers/dialects.js';
import { ADMIN_PASSWORD, FakeClock, startTestApp } from '../../../test/helpers/app.js';
import type { TestApp } from '../../../test/helpers/app.js';
import { call, enableTotp, login, post, signInWithTotp } from '../../../test/helpers/flows.js';

for (const dialect of DIALECTS) {
  describe(`sign-in and the MFA policy (${dialect})`, async () => {
    const available = await dialectAvailable(dialect);
    let db: TestDatabase;
    let t: TestApp;
    const open = async (env: Record<string, string> = {}, clock?: FakeClock) => {
      t = await startTestApp(db.url, env, clock ? { clock } : {});
      return t;
    };
    beforeEach(async () => {
      if (available) db = await createTestDatabase(dialect);
    });
    afterEach(async () => {
      await t?.close();
      await db?.drop();
    });

    it.skipIf(!available)('a wrong password or username is 401 "Invalid credentials" with WWW-Authenticate, and is logged for fail2ban', async () => {
      await open();
      for (const [user, pass] of [['admin', 'nope'], ['root', ADMIN_PASSWORD]] as const) {
        const r = await login(t, pass, user);
        expect(r.status).toBe(401);
        expect(r.body).toEqual({ detail: 'Invalid credentials' });
        expect(r.headers['www-authenticate']).toMatch(/Bearer/);
      }
      const log = readFileSync(t.settings.authLog, 'utf8').trim().split('\n');
      expect(log).toHaveLength(2);
      expect(log[0]).toMatch(/mailsvc-auth: authentication failure for admin from 127\.0\.0\.1$/);
      expect(log[1]).toMatch(/mailsvc-auth: authentication failure for root from 127\.0\.0\.1$/);
    });

    it.skipIf(!available)('with MFA required and nothing enrolled, the password alone gets 403 and no token', async () => {
      await open();
      const r = await login(t);
      expect(r.status).toBe(403);
      expect(String(r.body.detail)).toMatch(/enroll TOTP or configure SMS MFA/);
      expect(r.body.access_token).toBeUndefined();
      const rows = await t.ctx.db.selectFrom('access_tokens').selectAll().execute();
      expect(rows).toHaveLength(0);
    });

    it.skipIf(!available)('MFA not required: the password yields a token (not MFA-verified) that opens Admin endpoints', async () => {
      await open({ MAILSVC_MFA_REQUIRED: 'no' });
      const r = await login(t);
      expect(r.status).toBe(200);
      expect(r.body).toMatchObject({ token_type: 'bearer', expires_in: 3600, mfa_verified: false });
      const details = await call(t, 'GET', '/health/details?components=false', `Bearer ${String(r.body.access_token)}`);
      expect(details.status).toBe(200);
      expect(details.body).toMatchObject({ database: { reachable: true, dialect }, status: 'ok' });
    });

    it.skipIf(!available)('the emergency switch allows a password-only token while MFA is required', async () => {
      await open({ MAILSVC_MFA_ALLOW_BASIC_WITHOUT_TOKEN: 'yes' });
      const r = await login(t);
      expect(r.status).toBe(200);
      expect(r.body.mfa_verified).toBe(false);
      expect((await call(t, 'GET', '/health/details', t.basic())).status).toBe(200);
    });

    it.skipIf(!available)('Basic works on the /auth/mfa setup paths while not enrolled, and is 403 elsewhere', async () => {
      await open();
      expect((await call(t, 'GET', '/auth/mfa', t.basic())).status).toBe(200);
      expect((await call(t, 'GET', '/auth/mfa/providers', t.basic())).status).toBe(200);
      const other = await call(t, 'GET', '/health/details', t.basic());
      expect(other.status).toBe(403);
      expect(String(other.body.detail)).toMatch(/MFA is required/);
    });

    it.skipIf(!available)('once a factor is enrolled, password login returns a challenge, Basic gets 401 "Bearer token required"', async () => {
      await open();
      await enableTotp(t);
      const r = await login(t);
      expect(r.status).toBe(200);
      // TOTP's confirmation made recovery codes, offered as a method while some remain.
      expect(r.body).toMatchObject({ mfa_required: true, methods: ['totp', 'recovery'], expires_in: 300 });
      expect(typeof r.body.challenge_id).toBe('string');
      expect(r.body.access_token).toBeUndefined();
      for (const url of ['/auth/mfa', '/health/details']) {
        const b = await call(t, 'GET', url, t.basic());
        expect(b.status).toBe(401);
        expect(b.body.detail).toBe('Bearer token required');
        expect(b.headers['www-authenticate']).toBeDefined();
      }
    });

    it.skipIf(!available)('an MFA-verified token opens every Admin endpoint; Basic is allowed again with the emergency switch', async () => {
      await open();
      const secret = await enableTotp(t);
      const bearer = await signInWithTotp(t, secret);
      expect((await call(t, 'GET', '/health/details', bearer)).status).toBe(200);
      expect((await call(t, 'GET', '/auth/mfa', bearer)).body.methods).toEqual(['totp']);
      await t.close();
      t = await startTestApp(db.url, { MAILSVC_MFA_ALLOW_BASIC_WITHOUT_TOKEN: 'yes' });
      expect((await call(t, 'GET', '/health/details', t.basic())).status).toBe(200);
    });

    it.skipIf(!available)('a token issued before enrolment is revoked when a factor is enrolled, setup paths included', async () => {
      await open({ MAILSVC_MFA_REQUIRED: 'no' });
      const early = `Bearer ${String((await login(t)).body.access_token)}`;
      await t.close();
      t = await startTestApp(db.url);
      expect((await call(t, 'GET', '/auth/mfa', early)).status).toBe(200);
      await enableTotp(t);
      for (const url of ['/auth/mfa', '/health/details']) {
        const r = await call(t, 'GET', url, early);
        expect(r).toMatchObject({ status: 401, body: { detail: 'Invalid or expired token' } });
      }
    });

    it.skipIf(!available)('Admin endpoints without credentials, with a bad token, or with a malformed header answer 401', async () => {
      await open({ MAILSVC_MFA_REQUIRED: 'no' });
      for (const auth of ['', 'Bearer nope', 'Bearer abc.def', 'Token x', 'Basic %%%', 'Bearer ']) {
        const r = await call(t, 'GET', '/auth/mfa', auth);
        expect(r.status, auth).toBe(401);
        expect(r.headers['www-authenticate']).toMatch(/Bearer realm="mailsvc"/);
      }
    });

    it.skipIf(!available)('logout revokes the token from the body, else from the Bearer header, and is always 200', async () => {
      await open({ MAILSVC_MFA_REQUIRED: 'no' });
      const a = String((await login(t)).body.access_token);
      const b = String((await login(t)).body.access_token);
      expect(await post(t, '/auth/logout', { access_token: a })).toMatchObject({ status: 200, body: { ok: true } });
      expect((await call(t, 'GET', '/auth/mfa', `Bearer ${a}`)).status).toBe(401);
      expect((await call(t, 'GET', '/auth/mfa', `Bearer ${b}`)).status).toBe(200);
      const res = await t.app.inject({ method: 'POST', url: '/auth/logout', headers: { authorization: `Bearer ${b}` } });
      expect(res.statusCode).toBe(200);
      expect(res.json()).toEqual({ ok: true });
      expect((await call(t, 'GET', '/auth/mfa', `Bearer ${b}`)).status).toBe(401);
      expect((await t.app.inject({ method: 'POST', url: '/auth/logout' })).json()).toEqual({ ok: true });
      expect((await post(t, '/auth/logout', { access_token: 'forged.token' })).status).toBe(200);
    });

    it.skipIf(!available)('an access token expires after MAILSVC_ACCESS_TOKEN_TTL seconds', async () => {
      const clock = new FakeClock();
      await open({ MAILSVC_MFA_REQUIRED: 'no', MAILSVC_ACCESS_TOKEN_TTL: '120' }, clock);
      const r = await login(t);
      expect(r.body.expires_in).toBe(120);
      const bearer = `Bearer ${String(r.body.access_token)}`;
      clock.advance(119_000);
      expect((await call(t, 'GET', '/auth/mfa', bearer)).status).toBe(200);
      clock.advance(2_000);
      expect((await call(t, 'GET', '/auth/mfa', bearer)).status).toBe(401);
    });

    it.skipIf(!available)('only a SHA-256 of the token secret is stored', async () => {
      await open({ MAILSVC_MFA_REQUIRED: 'no' });
      const token = String((await login(t)).body.access_token);
      const [id, secret] = token.split('.');
      const row = await t.ctx.db.selectFrom('access_tokens').selectAll().where('id', '=', id ?? '').executeTakeFirstOrThrow();
      expect(JSON.stringify(row)).not.toContain(secret);
      const { createHash } = await import('node:crypto');
      expect(row.secret_hash).toBe(createHash('sha256').update(secret ?? '').digest('hex'));
    });
  });
}
