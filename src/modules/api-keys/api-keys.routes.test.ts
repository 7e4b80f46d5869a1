import { existsSync, readFileSync } from 'node:fs';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { DIALECTS, createTestDatabase, dialectAvailable } from '../../../test/helpers/dialects.js';
import type { TestDatabase } from '../../../test/helpers/dialects.js';
import { FakeClock, startTestApp } from '../../../test/helpers/app.js';
import type { TestApp } from '../../../test/helpers/app.js';
import { call, enableTotp, signInWithTotp } from '../../../test/helpers/flows.js';
import { oathtoolInstalled } from '../../../test/helpers/totp.js';
import { skipNotice } from '../../../test/helpers/services.js';

const haveOathtool = oathtoolInstalled();
if (!haveOathtool) skipNotice('oathtool (Debian package oathtool)', 'not on PATH');

const DAY = 86_400_000;

for (const dialect of DIALECTS) {
  describe(`scoped API keys (${dialect})`, async () => {
    const available = (await dialectAvailable(dialect)) && haveOathtool;
    let db: TestDatabase;
    let t: TestApp;
    let clock: FakeClock;
    let admin: string;
    beforeEach(async () => {
      if (!available) return;
      db = await createTestDatabase(dialect);
      clock = new FakeClock(Date.now());
      t = await startTestApp(db.url, { MAILSVC_API_AUTH_FAIL_LIMIT: '50' }, { clock });
      const secret = await enableTotp(t, clock.t);
      admin = await signInWithTotp(t, secret, clock.t);
    });
    afterEach(async () => {
      await t?.close();
      await db?.drop();
    });

    const inDays = (n: number) => new Date(clock.t + n * DAY).toISOString();
    const create = async (scopes: string[], name = 'monitoring', expires_at = inDays(30)) => {
      const r = await call(t, 'POST', '/auth/api-keys', admin, { name, scopes, expires_at });
      expect(r.status).toBe(201);
      return { id: String(r.body.id), key: `Bearer ${String(r.body.key)}`, body: r.body };
    };

    it.skipIf(!available)('created with an MFA-verified token, shown once, stored as a SHA-256, listed without the secret', async () => {
      const r = await call(t, 'POST', '/auth/api-keys', admin, { name: ' backup script ', scopes: ['read', 'accounts', 'read'], expires_at: inDays(90) });
      expect(r.status).toBe(201);
      const key = String(r.body.key);
      expect(key).toMatch(/^ak_[A-Za-z0-9_-]{16}\.[A-Za-z0-9_-]{43}$/);
      expect(r.body).toMatchObject({ id: key.split('.')[0], name: 'backup script', scopes: ['read', 'accounts'], created_by: 'admin', active: true, expires_at: inDays(90) });
      const secret = key.split('.')[1] as string;
      const row = await t.ctx.db.selectFrom('api_keys').selectAll().executeTakeFirstOrThrow();
      expect(row.secret_hash).toMatch(/^[0-9a-f]{64}$/);
      expect(JSON.stringify(row)).not.toContain(secret);
      const list = await call(t, 'GET', '/auth/api-keys', admin);
      expect(list.status).toBe(200);
      // A list like every other: {items, total, limit, offset}.
      expect(list.body).toEqual({ items: [{ id: r.body.id, name: 'backup script', scopes: ['read', 'accounts'], created_by: 'admin', created_at: expect.any(String), expires_at: inDays(90), active: true }], total: 1, limit: 50, offset: 0 });
      expect((await call(t, 'GET', '/auth/api-keys?offset=1', admin)).body).toMatchObject({ items: [], total: 1, offset: 1 });
      expect(JSON.stringify(list.body)).not.toContain(secret);
      expect(t.logs.join('')).not.toContain(secret);
    });

    it.skipIf(!available)('creation needs an MFA-verified token: Basic, a password-only token and an API key are refused', async () => {
      const body = { name: 'x', scopes: ['read'], expires_at: inDays(1) };
      expect((await call(t, 'POST', '/auth/api-keys', t.basic(), body)).status).toBe(401);
      const passwordOnly = `Bearer ${(await t.ctx.tokens.issue('admin', false)).access_token}`;
      expect((await call(t, 'POST', '/auth/api-keys', passwordOnly, body)).status).toBe(401);
      const { key } = await create(['admin']);
      expect((await call(t, 'POST', '/auth/api-keys', key, body))).toMatchObject({ status: 403, body: { detail: expect.stringMatching(/^API keys cannot be used on \/auth\//) } });
      expect((await call(t, 'GET', '/auth/api-keys', key)).status).toBe(403);
      expect((await t.ctx.db.selectFrom('api_keys').select('id').execute())).toHaveLength(1);
    });

    it.skipIf(!available)('bad input is 4xx and creates nothing: expiry missing, past or over 366 days, scopes unknown or empty', async () => {
      for (const [body, status] of [
        [{ name: 'x', scopes: ['read'] }, 422],
        [{ name: 'x', scopes: ['read'], expires_at: inDays(-1) }, 400],
        [{ name: 'x', scopes: ['read'], expires_at: inDays(367) }, 400],
        [{ name: 'x', scopes: ['read'], expires_at: 'tomorrow' }, 422], // not a time: the schema's rule, a 422 naming expires_at,
        [{ name: 'x', scopes: ['root'], expires_at: inDays(1) }, 422],
        [{ name: 'x', scopes: [], expires_at: inDays(1) }, 422],
        [{ name: '   ', scopes: ['read'], expires_at: inDays(1) }, 400],
      ] as const) {
        const r = await call(t, 'POST', '/auth/api-keys', admin, body);
        expect(r.status, JSON.stringify(body)).toBe(status);
        expect(typeof r.body.detail).toBe('string');
      }
      expect(await t.ctx.db.selectFrom('api_keys').select('id').execute()).toHaveLength(0);
      expect((await call(t, 'POST', '/auth/api-keys', admin, { name: 'x', scopes: ['read'], expires_at: inDays(366) })).status).toBe(201);
    });

    it.skipIf(!available)('scopes: read reaches every GET and nothing else; accounts changes domains and accounts; no key reaches /auth/mfa', async () => {
      const read = (await create(['read'])).key;
      const accounts = (await create(['accounts'])).key;
      const all = (await create(['admin'])).key;
      expect((await call(t, 'GET', '/domains', read)).status).toBe(200);
      expect((await call(t, 'GET', '/health/details', read)).status).toBe(200);
      const refused = await call(t, 'POST', '/domains', read, { name: 'example.org' });
      expect(refused).toMatchObject({ status: 403, body: { detail: 'This API key lacks the scope "accounts" for POST /domains' } });
      expect((await call(t, 'POST', '/domains', accounts, { name: 'example.org' })).status).toBe(201);
      expect((await call(t, 'GET', '/domains/example.org', accounts)).status).toBe(200);
      expect((await call(t, 'GET', '/health/details', accounts)).status).toBe(403);
      expect((await call(t, 'POST', '/aliases', accounts, { source: 'a@example.org', destinations: ['b@example.net'] })).status).toBe(201);
      expect((await call(t, 'DELETE', '/domains/example.org', read)).status).toBe(403);
      for (const key of [read, accounts, all]) {
        for (const [method, url] of [['GET', '/auth/mfa'], ['POST', '/auth/mfa/totp/enroll'], ['DELETE', '/auth/mfa/totp'], ['GET', '/auth/mfa/providers'], ['POST', '/auth/mfa/recovery-codes'], ['GET', '/auth/api-keys']] as const) {
          expect((await call(t, method, url, key)).status, `${method} ${url}`).toBe(403);
        }
      }
      expect((await call(t, 'GET', '/auth/mfa', admin)).body).toMatchObject({ totp_enabled: true });
    });

    it.skipIf(!available)('a revoked key and an expired key get 401; revocation holds at once on another instance', async () => {
      const { id, key } = await create(['read']);
      const other = await startTestApp(db.url, { MAILSVC_API_AUTH_FAIL_LIMIT: '50' }, { clock });
      try {
        expect((await call(other, 'GET', '/domains', key)).status).toBe(200);
        const del = await call(t, 'DELETE', `/auth/api-keys/${id}`, admin);
        expect(del.status).toBe(204);
        for (const app of [t, other]) {
          expect(await call(app, 'GET', '/domains', key)).toMatchObject({ status: 401, body: { detail: 'Invalid, expired or revoked API key' } });
        }
        expect((await call(t, 'DELETE', `/auth/api-keys/${id}`, admin)).status).toBe(404);
        expect((await call(t, 'GET', '/auth/api-keys', admin)).body).toMatchObject({ items: [], total: 0 });
      } finally {
        await other.close();
      }
      const short = await create(['read'], 'short', new Date(clock.t + 60_000).toISOString());
      expect((await call(t, 'GET', '/domains', short.key)).status).toBe(200);
      clock.advance(61_000);
      expect((await call(t, 'GET', '/domains', short.key)).status).toBe(401);
      expect((await call(t, 'GET', '/auth/api-keys', admin)).body).toMatchObject({ items: [{ id: short.id, active: false }], total: 1 });
    });
  });
}

describe('API keys and the lockout, and who may create them without a factor', async () => {
  let db: TestDatabase;
  let t: TestApp | undefined;
  beforeEach(async () => {
    db = await createTestDatabase('sqlite');
  });
  afterEach(async () => {
    await t?.close();
    t = undefined;
    await db.drop();
  });
  const body = () => ({ name: 'ci', scopes: ['read'], expires_at: new Date(Date.now() + DAY).toISOString() });

  it('failed key checks count like any credential: after the limit even a valid key gets 429', async () => {
    t = await startTestApp(db.url, { MAILSVC_MFA_REQUIRED: 'no', MAILSVC_API_AUTH_FAIL_LIMIT: '3' });
    const valid = `Bearer ${String((await call(t, 'POST', '/auth/api-keys', t.basic(), body())).body.key)}`;
    const [id] = valid.slice(7).split('.');
    for (const wrong of [`${id}.${'x'.repeat(43)}`, `ak_${'y'.repeat(16)}.${'z'.repeat(43)}`, `ak_${'q'.repeat(16)}.short`]) {
      expect((await call(t, 'GET', '/domains', `Bearer ${wrong}`)).status).toBe(401);
    }
    expect((await call(t, 'GET', '/domains', valid)).status).toBe(429);
    const log = existsSync(t.settings.authLog) ? readFileSync(t.settings.authLog, 'utf8') : '';
    expect(log.match(/authentication failure for api-key from /g)).toHaveLength(3);
  });

  it('no factor enrolled: Basic may create keys while MFA is not required, not while it is', async () => {
    t = await startTestApp(db.url, { MAILSVC_MFA_REQUIRED: 'no' });
    expect((await call(t, 'POST', '/auth/api-keys', t.basic(), body())).status).toBe(201);
    await t.close();
    t = await startTestApp(db.url);
    const r = await call(t, 'POST', '/auth/api-keys', t.basic(), body());
    expect(r.status).toBe(403);
    expect(String(r.body.detail)).toMatch(/MFA is required but not enrolled/);
  });
});
