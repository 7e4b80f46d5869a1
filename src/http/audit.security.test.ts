import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { DIALECTS, createTestDatabase, dialectAvailable } from '../../test/helpers/dialects.js';
import type { TestDatabase } from '../../test/helpers/dialects.js';
import { startTestApp } from '../../test/helpers/app.js';
import type { TestApp } from '../../test/helpers/app.js';
import { call, login } from '../../test/helpers/flows.js';
import { oathtoolCode, oathtoolInstalled, previousStepCode } from '../../test/helpers/totp.js';
import { skipNotice } from '../../test/helpers/services.js';
import { summarize } from '../modules/audit/index.js';

/** No secret sent in a request reaches the audit log, in any column; failed sign-ins stay out of it. */
const haveOathtool = oathtoolInstalled();
if (!haveOathtool) skipNotice('oathtool (Debian package oathtool)', 'not installed');

describe('the audit summary keeps only scalar, non-secret fields', () => {
  it('redacts secret-looking names, omits nested values, strips URL credentials', () => {
    expect(
      summarize({
        name: 'x', password: 'p1', new_password: 'p2', client_secret: 's', api_key: 'k', access_token: 't', code: '123456', nested: { code: '1' },
        list: ['a'], n: 3, ok: true, none: null, base_url: 'https://user:pw@sms.example.com/x', AuthKey: 'k2',
      }),
    ).toEqual({
      name: 'x', password: '[redacted]', new_password: '[redacted]', client_secret: '[redacted]', api_key: '[redacted]', access_token: '[redacted]', code: '[redacted]',
      nested: '[omitted]', list: '[omitted]', n: 3, ok: true, none: null, base_url: 'https://[redacted]@sms.example.com/x', AuthKey: '[redacted]',
    });
  });

  it('matches secret names by whole words: settings named like them are recorded, secrets named any way are not', () => {
    // Booleans and names with no secret word among theirs are settings: recorded as they are.
    expect(summarize({ passwordless: true, require_app_password: false, passkeys: 'on', keyword: 'k' })).toEqual({ passwordless: true, require_app_password: false, passkeys: 'on', keyword: 'k' });
    const secrets = { current_password: 'a', bearerToken: 'b', totp_code: 'c', 'recovery-codes': 'd', app_password: 'e', provider_key: 'f', passphrase: 'g', AuthKey: 'h', pin: 1234 };
    expect(summarize(secrets)).toEqual(Object.fromEntries(Object.keys(secrets).map((k) => [k, '[redacted]'])));
  });

  it('keeps at most 40 fields and cuts long strings', () => {
    const many = Object.fromEntries(Array.from({ length: 100 }, (_, i) => [`f${i}`, 'v'.repeat(1000)]));
    const s = summarize(many);
    expect(Object.keys(s)).toHaveLength(41);
    expect(s._more).toBe(true);
    expect(String(s.f0)).toHaveLength(201);
  });
});

for (const dialect of DIALECTS) {
  describe(`secrets never reach the audit table (${dialect})`, { timeout: 60_000 }, async () => {
    const available = await dialectAvailable(dialect);
    let db: TestDatabase;
    let t: TestApp;
    beforeEach(async () => {
      if (!available) return;
      db = await createTestDatabase(dialect);
      t = await startTestApp(db.url, { MAILSVC_MFA_REQUIRED: 'no' }, { kicker: { kick: async () => ({ kicked: true, detail: 'recorded' }) } });
    });
    afterEach(async () => {
      await t?.close();
      await db?.drop();
    });

    it.skipIf(!available || !haveOathtool)('mailbox passwords, SMS client secret and API key, app passwords, TOTP secret and code, failed-login passwords', async () => {
      const api = (method: 'POST' | 'PUT' | 'PATCH', url: string, body: unknown) => call(t, method, url, t.basic(), body);
      const secrets: string[] = [];
      const secret = (s: string): string => (secrets.push(s), s);

      expect((await api('POST', '/domains', { name: 'example.org' })).status).toBe(201);
      expect((await api('POST', '/accounts', { address: 'alice@example.org', password: secret('Mailbox-Pw-41xq') })).status).toBe(201);
      expect((await api('PATCH', '/accounts/alice@example.org', { password: secret('Mailbox-Pw-Changed-77zz') })).status).toBe(200);
      // A refused change is recorded too, still without its secret.
      expect((await api('POST', '/accounts', { address: 'alice@example.org', password: secret('Duplicate-Account-Pw-2468') })).status).toBe(409);
      const app = await api('POST', '/accounts/alice@example.org/app-passwords', { name: 'phone' });
      expect(app.status).toBe(201);
      secret(String(app.body.password));
      secret(String(app.body.password).split('.')[1] ?? '');
      const provider = await api('PUT', '/auth/mfa/providers', {
        code: 'provider_a', base_url: `https://user:${secret('UrlPass-93kd')}@sms.example.com`, client_id: 'cid', client_secret: secret('Client-Secret-5521'), api_key: secret('Api-Key-8812'),
      });
      expect(provider.status).toBe(400); // credentials in base_url are refused, and the request is still audited
      expect((await api('PUT', '/auth/mfa/providers', { code: 'provider_b', client_secret: secret('Client-Secret-Other-6610'), api_key: secret('Api-Key-Other-3307') })).status).toBe(200);
      const enroll = await call(t, 'POST', '/auth/mfa/totp/enroll', t.basic());
      expect(enroll.status).toBe(200);
      const totpSecret = secret(String(enroll.body.secret));
      const wrong = oathtoolCode(totpSecret, Date.now() + 10 * 60_000);
      expect((await api('POST', '/auth/mfa/totp/confirm', { code: wrong })).status).toBe(400);
      const code = await previousStepCode(totpSecret);
      expect((await api('POST', '/auth/mfa/totp/confirm', { code })).status).toBe(200);
      expect((await login(t, secret('Wrong-Admin-Pw-1234'))).status).toBe(401);
      expect((await call(t, 'POST', '/domains', `Basic ${Buffer.from(`admin:${secret('Wrong-Basic-Pw-5678')}`).toString('base64')}`, { name: 'x.org' })).status).toBe(401);
      const q = await t.app.inject({ method: 'POST', url: `/domains?token=${secret('Query-Token-4455')}`, payload: { name: 'q.org' }, headers: { authorization: t.basic() } });
      expect(q.statusCode).toBe(201);

      // Records are written after the answer: wait until all eleven are there.
      const expected = 11;
      await expect.poll(async () => (await t.ctx.db.selectFrom('audit_log').selectAll().execute()).length, { timeout: 30_000 }).toBe(expected);
      const rows = await t.ctx.db.selectFrom('audit_log').selectAll().execute();
      const dump = JSON.stringify(rows);
      for (const s of secrets) expect(dump, `secret ${s.slice(0, 4)}… in the audit table`).not.toContain(s);
      // Six-digit codes: as a value of their own, not inside an epoch-millisecond number.
      for (const c of [wrong, code]) expect(dump).not.toMatch(new RegExp(`(^|[^0-9])${c}($|[^0-9])`));
      expect(dump).not.toMatch(/Wrong-|\/auth\/login|\/auth\/mfa\/verify/);
      // Not vacuous: the changes are there, with their secrets marked as withheld.
      const actions = rows.map((r) => `${r.action} ${r.result}`);
      expect(actions).toEqual(expect.arrayContaining(['POST /accounts ok', 'PATCH /accounts/:id ok', 'POST /accounts conflict', 'PUT /auth/mfa/providers bad_request', 'POST /auth/mfa/totp/confirm bad_request', 'POST /auth/mfa/totp/confirm ok', 'POST /accounts/:id/app-passwords ok']));
      expect(rows.find((r) => r.action === 'POST /accounts' && r.result === 'ok')?.summary).toContain('"password":"[redacted]"');
    });
  });
}
