import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { DIALECTS, createTestDatabase, dialectAvailable } from '../../../test/helpers/dialects.js';
import type { TestDatabase } from '../../../test/helpers/dialects.js';
import { startTestApp } from '../../../test/helpers/app.js';
import type { TestApp } from '../../../test/helpers/app.js';
import { call, login, post, signInWithTotp } from '../../../test/helpers/flows.js';
import { oathtoolCode, oathtoolInstalled, previousStepCode } from '../../../test/helpers/totp.js';
import { skipNotice } from '../../../test/helpers/services.js';

const haveOathtool = oathtoolInstalled();
if (!haveOathtool) skipNotice('oathtool (Debian package oathtool)', 'not on PATH');

const CODE = /^[a-hjkmnp-z2-9]{5}-[a-hjkmnp-z2-9]{5}$/;

for (const dialect of DIALECTS) {
  describe(`recovery codes (${dialect})`, async () => {
    const available = (await dialectAvailable(dialect)) && haveOathtool;
    let db: TestDatabase;
    let t: TestApp;
    beforeEach(async () => {
      if (!available) return;
      db = await createTestDatabase(dialect);
      t = await startTestApp(db.url, { MAILSVC_API_AUTH_FAIL_LIMIT: '50' });
    });
    afterEach(async () => {
      await t?.close();
      await db?.drop();
    });

    /** Enrols TOTP with Basic; returns the secret and the codes the confirmation showed. */
    const enable = async (): Promise<{ secret: string; codes: string[] }> => {
      const secret = String((await call(t, 'POST', '/auth/mfa/totp/enroll', t.basic())).body.secret);
      const confirm = await call(t, 'POST', '/auth/mfa/totp/confirm', t.basic(), { code: (await previousStepCode(secret)) });
      expect(confirm.status).toBe(200);
      return { secret, codes: confirm.body.recovery_codes as string[] };
    };
    const useCode = async (code: string) => {
      const c = await login(t);
      return post(t, '/auth/mfa/verify', { challenge_id: c.body.challenge_id, method: 'recovery', code });
    };

    it.skipIf(!available)('TOTP confirmation shows ten codes once, stores only keyed hashes, and the challenge offers them', async () => {
      const { secret, codes } = await enable();
      expect(codes).toHaveLength(10);
      for (const c of codes) expect(c).toMatch(CODE);
      expect(new Set(codes).size).toBe(10);
      const rows = await t.ctx.db.selectFrom('admin_recovery_codes').selectAll().execute();
      expect(rows).toHaveLength(10);
      const stored = JSON.stringify(rows);
      for (const c of codes) {
        expect(stored).not.toContain(c);
        expect(stored).not.toContain(c.replace('-', ''));
      }
      for (const r of rows) expect(r.code_hash).toMatch(/^[0-9a-f]{64}$/);
      const bearer = await signInWithTotp(t, secret);
      const status = await call(t, 'GET', '/auth/mfa', bearer);
      expect(status.body).toMatchObject({ totp_enabled: true, methods: ['totp'], recovery_codes_remaining: 10 });
      expect(status.body.recovery_codes).toBeUndefined();
      expect((await login(t)).body.methods).toEqual(['totp', 'recovery']);
      // A confirm while enabled shows no codes again.
      const again = await call(t, 'POST', '/auth/mfa/totp/confirm', bearer, { code: oathtoolCode(secret, Date.now() + 30_000) });
      expect(again.status).toBe(200);
      expect(again.body.recovery_codes).toBeUndefined();
    });

    it.skipIf(!available)('a code signs in once (MFA-verified), in any case and without its hyphen; its use is a warning and an audit record, without the code', async () => {
      const { codes } = await enable();
      const [first = '', second = ''] = codes;
      const ok = await useCode(first);
      expect(ok).toMatchObject({ status: 200, body: { mfa_verified: true, token_type: 'bearer' } });
      expect(await useCode(first)).toMatchObject({ status: 401, body: { detail: 'Invalid code' } });
      expect((await useCode(second.replace('-', '').toUpperCase())).status).toBe(200);
      const status = await call(t, 'GET', '/auth/mfa', `Bearer ${String(ok.body.access_token)}`);
      expect(status.body.recovery_codes_remaining).toBe(8);
      const warnings = t.logs.filter((l) => l.includes('mfa.recovery_code_used'));
      expect(warnings).toHaveLength(2);
      expect(JSON.parse(warnings[1] as string)).toMatchObject({ level: 40, remaining: 8 });
      for (const c of codes) expect(t.logs.join('')).not.toContain(c);
      // Each use is in the audit log too: who, from where, how many are left; never the code.
      const audit = await call(t, 'GET', '/admin/audit?action=mfa.recovery_code_used', `Bearer ${String(ok.body.access_token)}`);
      expect(audit.status).toBe(200);
      const items = audit.body.items as { actor: string; source: string; action: string; summary: Record<string, unknown>; result: string }[];
      expect(items.map((e) => [e.actor, e.action, e.summary, e.result])).toEqual([
        ['admin', 'mfa.recovery_code_used', { remaining: 8 }, 'ok'],
        ['admin', 'mfa.recovery_code_used', { remaining: 9 }, 'ok'],
      ]);
      expect(items[0]?.source).toMatch(/^(127\.0\.0\.1|::1|::ffff:127\.0\.0\.1)$/);
      for (const c of codes) expect(JSON.stringify(audit.body)).not.toContain(c);
    });

    it.skipIf(!available)('parallel use of one code over many challenges: exactly one succeeds', async () => {
      const { codes } = await enable();
      const challenges = await Promise.all(Array.from({ length: 8 }, () => login(t)));
      const answers = await Promise.all(
        challenges.map((c) => post(t, '/auth/mfa/verify', { challenge_id: c.body.challenge_id, method: 'recovery', code: codes[0] })),
      );
      expect(answers.map((a) => a.status).sort()).toEqual([200, 401, 401, 401, 401, 401, 401, 401]);
      expect(await t.ctx.db.selectFrom('admin_recovery_codes').select('id').where('used_at', 'is not', null).execute()).toHaveLength(1);
    });

    it.skipIf(!available)('regeneration needs an MFA-verified token, shows a new set once and ends the old one', async () => {
      const { secret, codes } = await enable();
      expect((await call(t, 'POST', '/auth/mfa/recovery-codes', t.basic())).status).toBe(401);
      const bearer = await signInWithTotp(t, secret);
      const r = await call(t, 'POST', '/auth/mfa/recovery-codes', bearer);
      expect(r.status).toBe(200);
      const fresh = r.body.recovery_codes as string[];
      expect(fresh).toHaveLength(10);
      expect(r.body.recovery_codes_remaining).toBe(10);
      expect(fresh.some((c) => codes.includes(c))).toBe(false);
      expect((await useCode(codes[1] ?? '')).status).toBe(401);
      expect((await useCode(fresh[0] ?? '')).status).toBe(200);
    });

    it.skipIf(!available)('with MFA not required, Basic and password-only tokens still cannot regenerate once TOTP is on', async () => {
      await t.close();
      t = await startTestApp(db.url, { MAILSVC_MFA_REQUIRED: 'no', MAILSVC_API_AUTH_FAIL_LIMIT: '50' });
      await enable();
      const basic = await call(t, 'POST', '/auth/mfa/recovery-codes', t.basic());
      expect(basic).toMatchObject({ status: 401, body: { detail: expect.stringMatching(/^Bearer token required/) } });
      const passwordOnly = `Bearer ${(await t.ctx.tokens.issue('admin', false)).access_token}`;
      expect((await call(t, 'POST', '/auth/mfa/recovery-codes', passwordOnly)).status).toBe(401);
      // Still usable elsewhere under that policy.
      expect((await call(t, 'GET', '/auth/mfa', t.basic())).status).toBe(200);
    });

    it.skipIf(!available)('deleting TOTP erases the codes; without codes the challenge does not offer recovery', async () => {
      const { secret, codes } = await enable();
      const bearer = await signInWithTotp(t, secret);
      const del = await call(t, 'DELETE', '/auth/mfa/totp', bearer);
      expect(del.body).toMatchObject({ totp_enabled: false, recovery_codes_remaining: 0 });
      expect(await t.ctx.db.selectFrom('admin_recovery_codes').selectAll().execute()).toHaveLength(0);
      expect(await call(t, 'POST', '/auth/mfa/recovery-codes', bearer)).toMatchObject({ status: 400, body: { detail: expect.stringMatching(/enable TOTP first/) } });
      // Enrol again: a new set; use them all up, and recovery is no longer offered.
      const again = await enable();
      for (const c of again.codes) expect((await useCode(c)).status).toBe(200);
      const c = await login(t);
      expect(c.body.methods).toEqual(['totp']);
      const refused = await post(t, '/auth/mfa/verify', { challenge_id: c.body.challenge_id, method: 'recovery', code: codes[0] });
      expect(refused.status).toBe(400);
    });
  });
}

describe('recovery codes and the lockout', async () => {
  const available = haveOathtool;
  it.skipIf(!available)('wrong recovery codes count as failures: the attempt after the limit is 429, and nothing is evaluated then', async () => {
    const db = await createTestDatabase('sqlite');
    const t = await startTestApp(db.url, { MAILSVC_API_AUTH_FAIL_LIMIT: '3' });
    try {
      const secret = String((await call(t, 'POST', '/auth/mfa/totp/enroll', t.basic())).body.secret);
      const codes = (await call(t, 'POST', '/auth/mfa/totp/confirm', t.basic(), { code: (await previousStepCode(secret)) })).body.recovery_codes as string[];
      const c = await login(t);
      for (let i = 0; i < 3; i += 1) {
        expect((await post(t, '/auth/mfa/verify', { challenge_id: c.body.challenge_id, method: 'recovery', code: 'aaaaa-aaaaa' })).status).toBe(401);
      }
      const blocked = await post(t, '/auth/mfa/verify', { challenge_id: c.body.challenge_id, method: 'recovery', code: codes[0] });
      expect(blocked.status).toBe(429);
      // The right code was not looked at, so it is still unused.
      expect(await t.ctx.db.selectFrom('admin_recovery_codes').select('id').where('used_at', 'is not', null).execute()).toHaveLength(0);
    } finally {
      await t.close();
      await db.drop();
    }
  });
});
