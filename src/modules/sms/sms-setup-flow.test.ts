import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { DIALECTS, createTestDatabase, dialectAvailable } from '../../../test/helpers/dialects.js';
import type { TestDatabase } from '../../../test/helpers/dialects.js';
import { startTestApp } from '../../../test/helpers/app.js';
import type { TestApp } from '../../../test/helpers/app.js';
import { call, enableTotp, login, post, signInWithTotp } from '../../../test/helpers/flows.js';
import { startFakeSmsProvider } from '../../../test/helpers/fake-sms-provider.js';
import type { FakeSmsProvider } from '../../../test/helpers/fake-sms-provider.js';
import { oathtoolInstalled } from '../../../test/helpers/totp.js';
import { skipNotice } from '../../../test/helpers/services.js';

// The README's SMS set-up, as an administrator who enrolled TOTP first does it
// (default policy: after enrolment only an MFA-verified Bearer token), and what
// the service log says when the provider fails.

const CLIENT_SECRET = 'cs-Flow-Secret-1234';
const API_KEY = 'ak-Flow-Secret-5678';
const PHONE = '+49 30 1234 5678';
const haveOathtool = oathtoolInstalled();
if (!haveOathtool) skipNotice('oathtool (Debian package oathtool)', 'not found on PATH');

for (const dialect of DIALECTS) {
  describe(`SMS set-up after TOTP, as the README shows it (${dialect})`, async () => {
    const available = haveOathtool && (await dialectAvailable(dialect));
    let db: TestDatabase;
    let t: TestApp;
    let provider: FakeSmsProvider;
    beforeAll(async () => {
      provider = await startFakeSmsProvider();
    });
    afterAll(async () => provider?.close());
    beforeEach(async () => {
      if (!available) return;
      provider.reset();
      db = await createTestDatabase(dialect);
      t = await startTestApp(db.url, { MAILSVC_OUTBOUND_ALLOW_HOSTS: provider.hostPort });
    });
    afterEach(async () => {
      await t?.close();
      await db?.drop();
    });

    it.skipIf(!available)('stores the provider enabled with a Bearer token, turns SMS on, and logs why a send failed without secrets', { timeout: 20_000 }, async () => {
      const secret = await enableTotp(t);
      const record = { code: 'provider_a', base_url: provider.origin, client_id: 'id', client_secret: CLIENT_SECRET, api_key: API_KEY, enabled: true };
      // Basic no longer works once a factor is enrolled.
      expect((await call(t, 'PUT', '/auth/mfa/providers', t.basic(), record)).status).toBe(401);

      const bearer = await signInWithTotp(t, secret);
      const put = await call(t, 'PUT', '/auth/mfa/providers', bearer, record);
      expect(put.status).toBe(200);
      expect(put.body).toMatchObject({ code: 'provider_a', enabled: true, has_client_secret: true, has_api_key: true });
      const listed = await call(t, 'GET', '/auth/mfa/providers', bearer);
      expect(listed.body).toEqual(expect.arrayContaining([expect.objectContaining({ code: 'provider_a', enabled: true })]));
      // `enabled` is stored as given, false too.
      expect((await call(t, 'PUT', '/auth/mfa/providers', bearer, { code: 'provider_a', enabled: false })).body).toMatchObject({ enabled: false });
      expect((await call(t, 'PUT', '/auth/mfa/providers', bearer, { code: 'provider_a', enabled: true })).body).toMatchObject({ enabled: true });

      const sms = await call(t, 'PATCH', '/auth/mfa/sms', bearer, { phone: PHONE, enabled: true });
      expect(sms.status).toBe(200);
      expect(sms.body).toMatchObject({ sms_enabled: true, methods: expect.arrayContaining(['totp', 'sms']) as unknown });

      const challenge = await login(t);
      expect(challenge.body.methods).toEqual(expect.arrayContaining(['sms']));
      provider.respondWith(503, '{"error":"gateway down","echo":"secret-ish"}');
      const failed = await post(t, '/auth/mfa/sms', { challenge_id: challenge.body.challenge_id });
      expect(failed).toMatchObject({ status: 502, body: { detail: 'SMS provider error' } });

      const lines = t.logs.join('').split('\n').filter((l) => l.includes('SMS send through'));
      expect(lines).toHaveLength(1);
      const entry = JSON.parse(lines[0] ?? '{}') as Record<string, unknown>;
      expect(entry).toMatchObject({ provider: 'provider_a', status: 503, reason: 'provider answered HTTP 503' });
      const sent = provider.requests.at(-1)?.body as { message?: string; to?: string } | undefined;
      const code = /\d{6}/.exec(sent?.message ?? '')?.[0];
      expect(code).toBeDefined();
      const all = t.logs.join('');
      for (const s of [CLIENT_SECRET, API_KEY, sent?.to ?? '+4930', 'gateway down', 'secret-ish']) expect(all).not.toContain(s);
      // The code as a number of its own (log lines carry timestamps, whose digits may hold any six).
      expect(all).not.toMatch(new RegExp(`(?<![0-9])${code ?? ''}(?![0-9])`));

      // A provider that cannot be reached: no status, the transport reason.
      await provider.close();
      const again = await login(t);
      expect((await post(t, '/auth/mfa/sms', { challenge_id: again.body.challenge_id })).status).toBe(502);
      const last = t.logs.join('').split('\n').filter((l) => l.includes('SMS send through')).at(-1) ?? '{}';
      expect(JSON.parse(last)).toMatchObject({ provider: 'provider_a', status: null, reason: expect.stringMatching(/^no answer: /) as unknown });
      provider = await startFakeSmsProvider();
    });
  });
}
