import { readFileSync } from 'node:fs';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { DIALECTS, createTestDatabase, dialectAvailable } from '../../../test/helpers/dialects.js';
import type { TestDatabase } from '../../../test/helpers/dialects.js';
import { ADMIN_PASSWORD, FakeClock, startTestApp } from '../../../test/helpers/app.js';
import type { TestApp } from '../../../test/helpers/app.js';
import { enableTotp, login, signInWithTotp } from '../../../test/helpers/flows.js';
import { oathtoolCode } from '../../../test/helpers/totp.js';
import { SoftAuthenticator } from '../../../test/helpers/soft-authenticator.js';

// Issue: one MFA-verified 1-hour token became permanent administrator access:
// it registered its own passkey, switched passwordless sign-in on, and signed
// in with the passkey alone from then on. What changes how the administrator
// signs in now needs a sign-in at most MAILSVC_REAUTH_WINDOW old, or the
// password and a current TOTP code in the same request — for every client.

const ORIGIN = 'https://mail.example.org';
// The middle of a 30 s TOTP step.
const T0 = Date.parse('2026-11-21T12:00:15Z');
const WINDOW_S = 300;
type Json = Record<string, unknown>;
type Res = { status: number; body: Json; headers: Record<string, unknown> };

async function send(t: TestApp, method: string, url: string, headers: Record<string, string>, body?: unknown): Promise<Res> {
  const res = await t.app.inject({ method: method as 'GET', url, headers, ...(body === undefined ? {} : { payload: body as Json }) });
  return { status: res.statusCode, body: res.body === '' ? {} : res.json<Json>(), headers: res.headers };
}

/** The proof header: the password and a TOTP code (empty while no factor is enrolled). */
const proof = (code: string, password = ADMIN_PASSWORD) => ({ 'x-mailsvc-reauth': Buffer.from(`${password}:${code}`).toString('base64') });

const expectReauth = (r: Res) => {
  expect(r.status).toBe(403);
  expect(r.headers['x-mailsvc-reauth']).toBe('required');
  expect(String(r.body.detail)).toMatch(/fresh sign-in|fresh second factor|not accepted/);
};

const keyBody = (t: TestApp) => ({ name: 'ci', scopes: ['read'], expires_at: new Date(t.ctx.clock.now() + 86_400_000).toISOString() });

async function setup(dialect: (typeof DIALECTS)[number], env: Record<string, string> = {}) {
  const db = await createTestDatabase(dialect);
  const clock = new FakeClock(T0 - 120_000);
  const t = await startTestApp(db.url, { MAILSVC_PANEL_ORIGIN: ORIGIN, MAILSVC_API_AUTH_FAIL_LIMIT: '5', ...env }, { clock });
  return { db, clock, t };
}

for (const dialect of DIALECTS) {
  describe(`an MFA-verified token older than the window (${dialect})`, async () => {
    const available = await dialectAvailable(dialect);
    let db: TestDatabase;
    let t: TestApp;
    let clock: FakeClock;
    let secret: string;
    beforeEach(async () => {
      if (!available) return;
      ({ db, clock, t } = await setup(dialect));
      secret = await enableTotp(t, clock.t);
      clock.t = T0;
    });
    afterEach(async () => {
      await t?.close();
      await db?.drop();
    });
    /** A TOTP code of a step nobody used yet: each proof moves the clock one step on. */
    const nextCode = (): string => {
      clock.advance(30_000);
      return oathtoolCode(secret, clock.t);
    };

    it.skipIf(!available)('cannot register a passkey, turn passwordless on, remove a factor or create an API key; with the password and a fresh TOTP code in the request it can', async () => {
      const bearer = { authorization: await signInWithTotp(t, secret, clock.t) };
      clock.advance((WINDOW_S + 60) * 1000);
      const key = new SoftAuthenticator(ORIGIN);

      // The attack, step by step: every step refused, nothing changed.
      expectReauth(await send(t, 'POST', '/auth/mfa/passkeys/options', bearer));
      expectReauth(await send(t, 'PATCH', '/auth/mfa/passkeys/policy', bearer, { passwordless: true }));
      expectReauth(await send(t, 'POST', '/auth/api-keys', bearer, keyBody(t)));
      expectReauth(await send(t, 'DELETE', '/auth/mfa/totp', bearer));
      expectReauth(await send(t, 'PATCH', '/auth/mfa/sms', bearer, { enabled: false }));
      expect(await t.ctx.db.selectFrom('admin_passkeys').selectAll().execute()).toHaveLength(0);
      expect(await t.ctx.db.selectFrom('api_keys').selectAll().execute()).toHaveLength(0);
      expect((await send(t, 'GET', '/auth/mfa', bearer)).body.totp_enabled).toBe(true);
      // The same token still reads and does what does not change the sign-in.
      expect((await send(t, 'GET', '/auth/mfa/passkeys', bearer)).status).toBe(200);

      // The administrator, with the password and a current code in the same request.
      const options = await send(t, 'POST', '/auth/mfa/passkeys/options', { ...bearer, ...proof(nextCode()) });
      expect(options.status).toBe(200);
      const registered = await send(t, 'POST', '/auth/mfa/passkeys', { ...bearer, ...proof(nextCode()) }, { registration_id: options.body.registration_id, name: 'mine', credential: key.register(options.body.options as Json) });
      expect(registered.status).toBe(201);
      expect((await send(t, 'PATCH', '/auth/mfa/passkeys/policy', { ...bearer, ...proof(nextCode()) }, { passwordless: true })).status).toBe(200);
      expect((await send(t, 'POST', '/auth/api-keys', { ...bearer, ...proof(nextCode()) }, keyBody(t))).status).toBe(201);
      expectReauth(await send(t, 'DELETE', `/auth/mfa/passkeys/${String(registered.body.id)}`, bearer));
      expect((await send(t, 'DELETE', `/auth/mfa/passkeys/${String(registered.body.id)}`, { ...bearer, ...proof(nextCode()) })).status).toBe(204);
      expect((await send(t, 'DELETE', '/auth/mfa/totp', { ...bearer, ...proof(nextCode()) })).status).toBe(200);

      // The audit log has the refusals and the changes.
      const audit = await t.ctx.db.selectFrom('audit_log').select(['action', 'result']).execute();
      expect(audit).toContainEqual({ action: 'PATCH /auth/mfa/passkeys/policy', result: 'reauth_required' });
      expect(audit).toContainEqual({ action: 'PATCH /auth/mfa/passkeys/policy', result: 'ok' });
      expect(audit).toContainEqual({ action: 'POST /auth/mfa/passkeys', result: 'ok' });
    });

    it.skipIf(!available)('a token signed in within the window needs nothing more; the window is counted from its sign-in', async () => {
      const bearer = { authorization: await signInWithTotp(t, secret, clock.t) };
      clock.advance((WINDOW_S - 5) * 1000);
      expect((await send(t, 'POST', '/auth/api-keys', bearer, keyBody(t))).status).toBe(201);
      clock.advance(10_000);
      expectReauth(await send(t, 'POST', '/auth/api-keys', bearer, keyBody(t)));
    });
  });
}

describe('the proof in X-Mailsvc-Reauth', () => {
  let db: TestDatabase;
  let t: TestApp;
  let clock: FakeClock;
  let secret: string;
  beforeEach(async () => {
    ({ db, clock, t } = await setup('sqlite'));
    secret = await enableTotp(t, clock.t);
    clock.t = T0;
  });
  afterEach(async () => {
    await t?.close();
    await db?.drop();
  });
  const failures = (): number => {
    try {
      return readFileSync(t.settings.authLog, 'utf8').split('\n').filter((l) => l.includes('authentication failure')).length;
    } catch {
      return 0;
    }
  };

  it('a wrong password, a wrong or replayed code, or garbage is refused, counted in the lockout and logged, never 5xx', async () => {
    const bearer = { authorization: await signInWithTotp(t, secret, clock.t) };
    clock.advance((WINDOW_S + 60) * 1000);
    const code = oathtoolCode(secret, clock.t);
    expect((await send(t, 'POST', '/auth/api-keys', { ...bearer, ...proof(code) }, keyBody(t))).status).toBe(201);
    const before = failures();
    expectReauth(await send(t, 'POST', '/auth/api-keys', { ...bearer, ...proof(code) }, keyBody(t)));
    expectReauth(await send(t, 'POST', '/auth/api-keys', { ...bearer, ...proof(oathtoolCode(secret, clock.t + 30_000), 'wrong password') }, keyBody(t)));
    expectReauth(await send(t, 'POST', '/auth/api-keys', { ...bearer, 'x-mailsvc-reauth': '!!not base64!!' }, keyBody(t)));
    expectReauth(await send(t, 'POST', '/auth/api-keys', { ...bearer, ...proof('') }, keyBody(t)));
    expect(failures()).toBe(before + 4);
    // The fifth failure fills the lockout: the next attempt is 429, the right proof included.
    expectReauth(await send(t, 'POST', '/auth/api-keys', { ...bearer, ...proof('000000') }, keyBody(t)));
    expect((await send(t, 'POST', '/auth/api-keys', { ...bearer, ...proof(oathtoolCode(secret, clock.t + 30_000)) }, keyBody(t))).status).toBe(429);
    expect(await t.ctx.db.selectFrom('api_keys').selectAll().execute()).toHaveLength(1);
    // The proof never reaches a log line or the audit log.
    expect(t.logs.join('')).not.toContain(Buffer.from(ADMIN_PASSWORD).toString('base64').slice(0, 16));
    expect(JSON.stringify(await t.ctx.db.selectFrom('audit_log').selectAll().execute())).not.toContain(ADMIN_PASSWORD);
  });
});

describe('every client: Basic, API keys, the panel', () => {
  let db: TestDatabase;
  let t: TestApp;
  let clock: FakeClock;
  afterEach(async () => {
    await t?.close();
    await db?.drop();
  });

  it('Basic under the emergency switch cannot disable TOTP without a current code in the request', async () => {
    ({ db, clock, t } = await setup('sqlite', { MAILSVC_MFA_ALLOW_BASIC_WITHOUT_TOKEN: 'yes' }));
    const secret = await enableTotp(t, clock.t);
    clock.t = T0;
    const basic = { authorization: t.basic() };
    expectReauth(await send(t, 'DELETE', '/auth/mfa/totp', basic));
    expect((await send(t, 'GET', '/auth/mfa', basic)).body.totp_enabled).toBe(true);
    expect((await send(t, 'DELETE', '/auth/mfa/totp', { ...basic, ...proof(oathtoolCode(secret, clock.t)) })).status).toBe(200);
  });

  it('before any factor: Basic carries the password itself; an old password-only token needs the password again', async () => {
    ({ db, clock, t } = await setup('sqlite', { MAILSVC_MFA_REQUIRED: 'no' }));
    expect((await send(t, 'POST', '/auth/api-keys', { authorization: t.basic() }, keyBody(t))).status).toBe(201);
    const token = await login(t);
    const bearer = { authorization: `Bearer ${String(token.body.access_token)}` };
    clock.advance((WINDOW_S + 1) * 1000);
    expectReauth(await send(t, 'POST', '/auth/api-keys', bearer, keyBody(t)));
    expect((await send(t, 'POST', '/auth/api-keys', { ...bearer, ...proof('') }, keyBody(t))).status).toBe(201);
  });

  it('an API key never passes, not even with a proof', async () => {
    ({ db, clock, t } = await setup('sqlite', { MAILSVC_MFA_REQUIRED: 'no' }));
    const made = await send(t, 'POST', '/auth/api-keys', { authorization: t.basic() }, { ...keyBody(t), scopes: ['admin'] });
    const apiKey = { authorization: `Bearer ${String(made.body.key)}` };
    expect((await send(t, 'POST', '/auth/api-keys', apiKey, keyBody(t))).status).toBe(403);
    expect((await send(t, 'POST', '/auth/api-keys', { ...apiKey, ...proof('') }, keyBody(t))).status).toBe(403);
  });

  it('a panel session older than the window is asked to re-authenticate (X-Mailsvc-Reauth: required) before creating an API key', async () => {
    ({ db, clock, t } = await setup('sqlite', { MAILSVC_ENABLE_WEB_PANEL: 'yes' }));
    const secret = await enableTotp(t, clock.t);
    clock.t = T0;
    const same = { 'sec-fetch-site': 'same-origin', origin: ORIGIN, host: 'mail.example.org' };
    const signIn = async () => {
      const challenge = await send(t, 'POST', '/panel/session/login', same, { username: 'admin', password: ADMIN_PASSWORD });
      const done = await send(t, 'POST', '/panel/session/verify', same, { challenge_id: challenge.body.challenge_id, method: 'totp', code: oathtoolCode(secret, clock.t) });
      expect(done.status).toBe(200);
      return { ...same, cookie: String(done.headers['set-cookie']).split(';')[0]!, 'x-csrf-token': String(done.body.csrf_token) };
    };
    const session = await signIn();
    clock.advance((WINDOW_S + 30) * 1000);
    const stale = await send(t, 'POST', '/panel/api/auth/api-keys', session, keyBody(t));
    expectReauth(stale);
    expect(await t.ctx.db.selectFrom('api_keys').selectAll().execute()).toHaveLength(0);
    // The panel's re-authentication dialog is a new sign-in: the action then goes through.
    const again = await signIn();
    expect((await send(t, 'POST', '/panel/api/auth/api-keys', again, keyBody(t))).status).toBe(201);
  });
});
