import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { DIALECTS, createTestDatabase, dialectAvailable } from '../../../test/helpers/dialects.js';
import type { TestDatabase } from '../../../test/helpers/dialects.js';
import { startTestApp } from '../../../test/helpers/app.js';
import type { TestApp } from '../../../test/helpers/app.js';
import { call, login, post } from '../../../test/helpers/flows.js';
import { startFakeSmsProvider } from '../../../test/helpers/fake-sms-provider.js';
import type { FakeSmsProvider } from '../../../test/helpers/fake-sms-provider.js';

const CLIENT_SECRET = 'cs-Very-Secret-4711';
const API_KEY = 'ak-Also-Secret-0815';

for (const dialect of DIALECTS) {
  describe(`SMS providers, SMS settings and SMS sign-in (${dialect})`, async () => {
    const available = await dialectAvailable(dialect);
    let db: TestDatabase;
    let t: TestApp;
    let provider: FakeSmsProvider;
    beforeAll(async () => {
      provider = await startFakeSmsProvider();
    });
    afterAll(async () => {
      await provider?.close();
    });
    beforeEach(async () => {
      if (!available) return;
      provider.reset();
      db = await createTestDatabase(dialect);
      // Basic stays usable after SMS is enabled (emergency switch): this file is about
      // the SMS settings and the send/verify flow; auth.routes.test.ts covers the Basic policy.
      t = await startTestApp(db.url, {
        MAILSVC_OUTBOUND_ALLOW_HOSTS: provider.hostPort,
        MAILSVC_API_AUTH_FAIL_LIMIT: '50',
        MAILSVC_MFA_ALLOW_BASIC_WITHOUT_TOKEN: 'yes',
      });
    });
    afterEach(async () => {
      await t?.close();
      await db?.drop();
    });

    const configureProvider = () =>
      call(t, 'PUT', '/auth/mfa/providers', t.basic(), {
        code: 'provider_a', base_url: provider.origin, client_id: 'client-1', client_secret: CLIENT_SECRET, api_key: API_KEY, from_sender: 'MAILSVC',
      });
    const enableSms = async () => {
      expect((await configureProvider()).status).toBe(200);
      const r = await call(t, 'PATCH', '/auth/mfa/sms', t.basic(), { phone: '+49 30 1234 5678', enabled: true });
      expect(r.status).toBe(200);
      return r;
    };
    /**
     * A fresh sign-in with password and SMS code: once SMS is on, changing it (a factor) needs one
     * (docs/auth.md, Re-authentication); Basic alone no longer may.
     */
    const smsBearer = async (): Promise<string> => {
      const c = await login(t);
      expect((await post(t, '/auth/mfa/sms', { challenge_id: c.body.challenge_id })).status).toBe(200);
      const sent = provider.requests.at(-1)?.body as { message: string } | undefined;
      const code = /(\d{6})/.exec(sent?.message ?? '')?.[1] ?? '';
      const ok = await post(t, '/auth/mfa/verify', { challenge_id: c.body.challenge_id, method: 'sms', code });
      expect(ok.status).toBe(200);
      return `Bearer ${String(ok.body.access_token)}`;
    };

    it.skipIf(!available)('GET /auth/mfa/providers shows both providers with their defaults, in order', async () => {
      const r = await call(t, 'GET', '/auth/mfa/providers', t.basic());
      expect(r.status).toBe(200);
      expect(r.body).toEqual([
        { code: 'provider_a', enabled: false, base_url: 'https://api.provider-a.example', client_id: null, has_client_secret: false, has_api_key: false, send_path: '/api/v1/modules/sms/send', from_sender: null, route: 'internal', label: 'provider_a' },
        { code: 'provider_b', enabled: false, base_url: 'https://api.provider-b.example', client_id: null, has_client_secret: false, has_api_key: false, send_path: '/api/v1/modules/provider_b/send', from_sender: null, route: 'internal', label: 'provider_b' },
      ]);
    });

    it.skipIf(!available)('PUT creates the record from the defaults, stores secrets sealed and never returns them', async () => {
      const r = await call(t, 'PUT', '/auth/mfa/providers', t.basic(), { code: 'provider_b', client_secret: CLIENT_SECRET, api_key: API_KEY, enabled: true });
      expect(r.status).toBe(200);
      expect(r.body).toEqual({
        code: 'provider_b', enabled: true, base_url: 'https://api.provider-b.example', client_id: null, has_client_secret: true, has_api_key: true,
        send_path: '/api/v1/modules/provider_b/send', from_sender: null, route: 'internal', label: 'provider_b',
      });
      const row = await t.ctx.db.selectFrom('sms_providers').selectAll().where('code', '=', 'provider_b').executeTakeFirstOrThrow();
      expect(row.client_secret).toMatch(/^v1\./);
      expect(row.api_key).toMatch(/^v1\./);
      expect(JSON.stringify(row)).not.toContain(CLIENT_SECRET);
      expect(JSON.stringify(row)).not.toContain(API_KEY);
      const list = await call(t, 'GET', '/auth/mfa/providers', t.basic());
      expect(JSON.stringify(list.body)).not.toMatch(/cs-Very|ak-Also/);
      expect(t.logs.join('')).not.toMatch(/cs-Very|ak-Also/);
    });

    it.skipIf(!available)('clear_secrets removes both secrets; with new values in the same request the new values stay', async () => {
      await configureProvider();
      const cleared = await call(t, 'PUT', '/auth/mfa/providers', t.basic(), { code: 'provider_a', clear_secrets: true });
      expect(cleared.body).toMatchObject({ has_client_secret: false, has_api_key: false, client_id: 'client-1' });
      const both = await call(t, 'PUT', '/auth/mfa/providers', t.basic(), { code: 'provider_a', clear_secrets: true, api_key: 'new-key' });
      expect(both.body).toMatchObject({ has_client_secret: false, has_api_key: true });
      const cfg = await t.ctx.providers.sendConfig('provider_a');
      expect(cfg.apiKey).toBe('new-key');
      // An empty secret is "not given", not "clear".
      const empty = await call(t, 'PUT', '/auth/mfa/providers', t.basic(), { code: 'provider_a', api_key: '' });
      expect(empty.body.has_api_key).toBe(true);
    });

    it.skipIf(!available)('a base_url that is not public HTTPS is 400 "Invalid base_url…" and nothing is stored', async () => {
      for (const base_url of ['http://1.1.1.1', 'https://127.0.0.1', 'https://2130706433', 'https://[::1]', 'https://10.1.2.3', 'https://localhost', 'https://u:p@1.1.1.1']) {
        const r = await call(t, 'PUT', '/auth/mfa/providers', t.basic(), { code: 'provider_a', base_url, api_key: 'x' });
        expect(r.status, base_url).toBe(400);
        expect(String(r.body.detail)).toMatch(/^Invalid base_url: /);
      }
      expect(await t.ctx.db.selectFrom('sms_providers').selectAll().execute()).toHaveLength(0);
      const ok = await call(t, 'PUT', '/auth/mfa/providers', t.basic(), { code: 'provider_a', base_url: 'https://1.1.1.1/sms/' });
      expect(ok.body.base_url).toBe('https://1.1.1.1/sms');
    });

    it.skipIf(!available)('an unknown provider code is 400 "Unknown provider" on PUT and on PATCH /auth/mfa/sms', async () => {
      const put = await call(t, 'PUT', '/auth/mfa/providers', t.basic(), { code: 'provider_z', api_key: 'x' });
      expect(put).toMatchObject({ status: 400, body: { detail: 'Unknown provider' } });
      const patch = await call(t, 'PATCH', '/auth/mfa/sms', t.basic(), { provider: 'provider_z' });
      expect(patch).toMatchObject({ status: 400, body: { detail: 'Unknown provider' } });
      const bad = await call(t, 'PUT', '/auth/mfa/providers', t.basic(), { code: 'provider_a', send_path: 'evil.example/x' });
      expect(bad.status).toBe(400);
    });

    it.skipIf(!available)('PATCH /auth/mfa/sms normalises the phone to E.164; unreadable numbers are 400', async () => {
      const r = await call(t, 'PATCH', '/auth/mfa/sms', t.basic(), { phone: '+49 (30) 1234-5678' });
      expect(r.body).toMatchObject({ sms_phone: '+493012345678', sms_enabled: false });
      for (const phone of ['12', 'not a phone', '+999 123']) {
        const bad = await call(t, 'PATCH', '/auth/mfa/sms', t.basic(), { phone });
        expect(bad).toMatchObject({ status: 400, body: { detail: 'Invalid phone number' } });
      }
      expect((await call(t, 'GET', '/auth/mfa', t.basic())).body.sms_phone).toBe('+493012345678');
    });

    it.skipIf(!available)('enabling needs a phone and a provider with credentials; a 400 commits none of the fields', async () => {
      const noPhone = await call(t, 'PATCH', '/auth/mfa/sms', t.basic(), { enabled: true });
      expect(noPhone.status).toBe(400);
      const noCreds = await call(t, 'PATCH', '/auth/mfa/sms', t.basic(), { phone: '+4930123456789', provider: 'provider_b', enabled: true });
      expect(noCreds.status).toBe(400);
      expect(String(noCreds.body.detail)).toContain('provider_b');
      const status = await call(t, 'GET', '/auth/mfa', t.basic());
      expect(status.body).toMatchObject({ sms_phone: null, sms_provider: null, sms_enabled: false });
      // The default provider is used when none is stored.
      await configureProvider();
      const on = await call(t, 'PATCH', '/auth/mfa/sms', t.basic(), { phone: '+4930123456789', enabled: true });
      expect(on.body).toMatchObject({ sms_enabled: true, sms_provider: null, methods: ['sms'] });
      // SMS is a factor now: Basic alone may not switch it off.
      expect((await call(t, 'PATCH', '/auth/mfa/sms', t.basic(), { enabled: false })).status).toBe(403);
      const off = await call(t, 'PATCH', '/auth/mfa/sms', await smsBearer(), { enabled: false });
      expect(off.body).toMatchObject({ sms_enabled: false, sms_phone: '+4930123456789', methods: [] });
      await call(t, 'PATCH', '/auth/mfa/sms', t.basic(), { enabled: true });
      const cleared = await call(t, 'PATCH', '/auth/mfa/sms', await smsBearer(), { phone: '' });
      expect(cleared.body).toMatchObject({ sms_enabled: false, sms_phone: null });
    });

    it.skipIf(!available)('credentials from the environment count as configured', async () => {
      await t.close();
      t = await startTestApp(db.url, { MAILSVC_SMS_PROVIDER_B_API_KEY: 'env-key', MAILSVC_SMS_PROVIDER_B_CLIENT_ID: 'env-id' });
      const list = await call(t, 'GET', '/auth/mfa/providers', t.basic());
      expect((list.body as unknown as Record<string, unknown>[])[1]).toMatchObject({ code: 'provider_b', has_api_key: true, client_id: 'env-id' });
      const r = await call(t, 'PATCH', '/auth/mfa/sms', t.basic(), { phone: '+4930123456789', provider: 'provider_b', enabled: true });
      expect(r.status).toBe(200);
    });

    it.skipIf(!available)('SMS sign-in: the code goes to the provider with the three headers, and verifies once', async () => {
      await enableSms();
      const c = await login(t);
      expect(c.body).toMatchObject({ mfa_required: true, methods: ['sms'] });
      const sent = await post(t, '/auth/mfa/sms', { challenge_id: c.body.challenge_id });
      expect(sent.status).toBe(200);
      expect(sent.body).toEqual({ ok: true, method: 'sms', expires_in: 300, phone_hint: '***678' });
      expect(provider.requests).toHaveLength(1);
      const req = provider.requests[0]!;
      expect(req.method).toBe('POST');
      expect(req.path).toBe('/api/v1/modules/sms/send');
      expect(req.headers['x-client-id']).toBe('client-1');
      expect(req.headers['x-client-secret']).toBe(CLIENT_SECRET);
      expect(req.headers['x-api-key']).toBe(API_KEY);
      const body = req.body as { to: string; message: string; from: string; route: string };
      expect(body).toMatchObject({ to: '+493012345678', from: 'MAILSVC', route: 'internal' });
      const code = /(\d{6})/.exec(body.message)?.[1] ?? '';
      expect(code).toMatch(/^\d{6}$/);
      const wrong = await post(t, '/auth/mfa/verify', { challenge_id: c.body.challenge_id, method: 'sms', code: code === '000000' ? '111111' : '000000' });
      expect(wrong).toMatchObject({ status: 401, body: { detail: 'Invalid code' } });
      const ok = await post(t, '/auth/mfa/verify', { challenge_id: c.body.challenge_id, method: 'sms', code });
      expect(ok.status).toBe(200);
      expect(ok.body.mfa_verified).toBe(true);
      expect((await post(t, '/auth/mfa/verify', { challenge_id: c.body.challenge_id, method: 'sms', code })).status).toBe(401);
      expect(t.logs.join('')).not.toContain(code);
    });

    it.skipIf(!available)('at most 3 sends per challenge; a new send replaces the code', async () => {
      await enableSms();
      const c = await login(t);
      for (let i = 0; i < 3; i += 1) expect((await post(t, '/auth/mfa/sms', { challenge_id: c.body.challenge_id })).status).toBe(200);
      const fourth = await post(t, '/auth/mfa/sms', { challenge_id: c.body.challenge_id });
      expect(fourth.status).toBe(429);
      expect(fourth.headers['retry-after']).toBeUndefined();
      expect(provider.requests).toHaveLength(3);
      const codes = provider.requests.map((r) => /(\d{6})/.exec((r.body as { message: string }).message)?.[1]);
      const last = codes[2] ?? '';
      if (codes[0] !== last) {
        expect((await post(t, '/auth/mfa/verify', { challenge_id: c.body.challenge_id, method: 'sms', code: codes[0] })).status).toBe(401);
      }
      expect((await post(t, '/auth/mfa/verify', { challenge_id: c.body.challenge_id, method: 'sms', code: last })).status).toBe(200);
    });

    it.skipIf(!available)('send errors: unknown challenge 401, no sms method 400, SMS turned off 400, provider failure 502', async () => {
      const unknown = await post(t, '/auth/mfa/sms', { challenge_id: 'nope' });
      expect(unknown).toMatchObject({ status: 401, body: { detail: 'Invalid or expired challenge' } });
      await enableSms();
      const c = await login(t);
      provider.respondWith(500, '{"error":"boom"}');
      const failed = await post(t, '/auth/mfa/sms', { challenge_id: c.body.challenge_id });
      expect(failed).toMatchObject({ status: 502, body: { detail: 'SMS provider error' } });
      provider.reset();
      expect((await call(t, 'PATCH', '/auth/mfa/sms', await smsBearer(), { enabled: false })).status).toBe(200);
      const off = await post(t, '/auth/mfa/sms', { challenge_id: c.body.challenge_id });
      expect(off.status).toBe(400);
      // Failures of a send are not authentication failures.
      expect(t.logs.join('')).not.toMatch(/authentication failure/);
    });
  });
}
