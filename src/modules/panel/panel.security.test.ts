import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { existsSync } from 'node:fs';
import { FakeClock, startTestApp } from '../../../test/helpers/app.js';
import type { TestApp } from '../../../test/helpers/app.js';
import { DIALECTS, createTestDatabase, dialectAvailable } from '../../../test/helpers/dialects.js';
import type { TestDatabase } from '../../../test/helpers/dialects.js';
import { call, enableTotp } from '../../../test/helpers/flows.js';
import { oathtoolCode } from '../../../test/helpers/totp.js';
import { loadSettings } from '../../config/settings.js';
import { panelBuildDir } from './index.js';

type Res = { status: number; body: Record<string, unknown>; headers: Record<string, unknown>; raw: string };
const SAME_ORIGIN = { 'sec-fetch-site': 'same-origin', origin: 'https://mail.example.org', host: 'mail.example.org:443' };

beforeAll(() => {
  // The static-file rules need the built panel: test/global-setup.ts builds it before any test file runs.
  if (!existsSync(`${panelBuildDir()}/index.html`)) throw new Error(`${panelBuildDir()} is not built: the vitest globalSetup (npm run build) did not run`);
});

async function req(t: TestApp, method: string, url: string, opts: { cookie?: string; csrf?: string; body?: unknown; headers?: Record<string, string>; ip?: string } = {}): Promise<Res> {
  const headers: Record<string, string> = { ...SAME_ORIGIN, ...(opts.headers ?? {}) };
  if (opts.cookie) headers.cookie = opts.cookie;
  if (opts.csrf) headers['x-csrf-token'] = opts.csrf;
  const res = await t.app.inject({ method: method as 'GET', url, headers, ...(opts.body === undefined ? {} : { payload: opts.body as object }), ...(opts.ip ? { remoteAddress: opts.ip } : {}) });
  let body: Record<string, unknown> = {};
  try {
    body = res.body ? (JSON.parse(res.body) as Record<string, unknown>) : {};
  } catch {
    // a static file
  }
  return { status: res.statusCode, body, headers: res.headers, raw: res.body };
}

/** Password, then the TOTP code: the session cookie (name=value) and its CSRF token. */
async function panelSignIn(t: TestApp, secret: string, at: number, ip?: string): Promise<{ cookie: string; csrf: string; setCookie: string }> {
  const challenge = await req(t, 'POST', '/panel/session/login', { body: { username: 'admin', password: 'correct horse battery staple' }, ...(ip ? { ip } : {}) });
  expect(challenge.status).toBe(200);
  expect(challenge.body.methods).toContain('totp');
  const done = await req(t, 'POST', '/panel/session/verify', { body: { challenge_id: challenge.body.challenge_id, method: 'totp', code: oathtoolCode(secret, at) }, ...(ip ? { ip } : {}) });
  expect(done.status).toBe(200);
  const setCookie = String(done.headers['set-cookie']);
  return { cookie: setCookie.split(';')[0]!, csrf: String(done.body.csrf_token), setCookie };
}

describe('web panel switched off (the default)', () => {
  it('serves nothing under /panel', async () => {
    const db = await createTestDatabase('sqlite');
    const t = await startTestApp(db.url);
    try {
      for (const url of ['/panel', '/panel/', '/panel/index.html', '/panel/session', '/panel/api/domains']) expect((await req(t, 'GET', url)).status).toBe(404);
      expect((await req(t, 'POST', '/panel/session/login', { body: { username: 'admin', password: 'x' } })).status).toBe(404);
    } finally {
      await t.close();
      await db.drop();
    }
  });
});

describe('the first sign-in, before any second factor is enrolled', () => {
  it('opens a session that reaches the MFA setup only, and ends when TOTP is enrolled', async () => {
    const db = await createTestDatabase('sqlite');
    const t = await startTestApp(db.url, { MAILSVC_ENABLE_WEB_PANEL: 'yes' });
    try {
      const wrong = await req(t, 'POST', '/panel/session/login', { body: { username: 'admin', password: 'wrong' } });
      expect(wrong.status).toBe(401);
      const r = await req(t, 'POST', '/panel/session/login', { body: { username: 'admin', password: 'correct horse battery staple' } });
      expect(r.status).toBe(200);
      const cookie = String(r.headers['set-cookie']).split(';')[0]!;
      const csrf = String(r.body.csrf_token);
      expect((await req(t, 'GET', '/panel/api/auth/mfa', { cookie })).status).toBe(200);
      expect((await req(t, 'GET', '/panel/api/domains', { cookie })).status).toBe(403);
      expect((await req(t, 'POST', '/panel/api/domains', { cookie, csrf, body: { name: 'early.example' } })).status).toBe(403);
      const enroll = await req(t, 'POST', '/panel/api/auth/mfa/totp/enroll', { cookie, csrf });
      expect(enroll.status).toBe(200);
      const confirm = await req(t, 'POST', '/panel/api/auth/mfa/totp/confirm', { cookie, csrf, body: { code: oathtoolCode(String(enroll.body.secret)) } });
      expect(confirm.status).toBe(200);
      // The password-only token is revoked with the enrolment: the session can do nothing more.
      expect((await req(t, 'GET', '/panel/api/auth/mfa', { cookie })).status).toBe(401);
      // And the password alone no longer opens a session: it answers the challenge.
      const again = await req(t, 'POST', '/panel/session/login', { body: { username: 'admin', password: 'correct horse battery staple' } });
      expect(again.body.challenge_id).toBeDefined();
      expect(again.headers['set-cookie']).toBeUndefined();
    } finally {
      await t.close();
      await db.drop();
    }
  });
});

describe('the development switch', () => {
  it('is refused on an address other than loopback', () => {
    expect(() => loadSettings({ MAILSVC_DATA_DIR: '/tmp', MAILSVC_PANEL_DEV_HTTP: 'yes', MAILSVC_API_HOST: '0.0.0.0' })).toThrow(/MAILSVC_PANEL_DEV_HTTP/);
  });
  it('sets a cookie without Secure and answers loopback only', async () => {
    const db = await createTestDatabase('sqlite');
    const t = await startTestApp(db.url, { MAILSVC_ENABLE_WEB_PANEL: 'yes', MAILSVC_PANEL_DEV_HTTP: 'yes' });
    try {
      const secret = await enableTotp(t);
      const s = await panelSignIn(t, secret, Date.now());
      expect(s.setCookie).toMatch(/^mailsvc_panel_dev=[A-Za-z0-9_-]{43}; Path=\/; HttpOnly; SameSite=Strict$/);
      expect((await req(t, 'GET', '/panel/session', { cookie: s.cookie })).status).toBe(200);
      const far = await req(t, 'GET', '/panel/session', { cookie: s.cookie, ip: '198.51.100.7' });
      expect(far.status).toBe(403);
      expect(far.body.detail).toMatch(/loopback/);
    } finally {
      await t.close();
      await db.drop();
    }
  });
});

for (const dialect of DIALECTS) {
  describe(`web panel sessions on ${dialect}`, () => {
    let db: TestDatabase | undefined;
    let t: TestApp;
    let secret: string;
    const clock = new FakeClock(Date.now());

    beforeAll(async () => {
      if (!(await dialectAvailable(dialect))) return;
      db = await createTestDatabase(dialect);
      t = await startTestApp(db.url, { MAILSVC_ENABLE_WEB_PANEL: 'yes' }, { clock });
      secret = await enableTotp(t, clock.now());
    }, 60_000);
    afterAll(async () => {
      if (!db) return;
      await t.close();
      await db.drop();
    });
    // Each sign-in takes a TOTP step of its own (a code is never accepted twice).
    const nextSignIn = async (ip?: string) => {
      clock.advance(30_000);
      return panelSignIn(t, secret, clock.now(), ip);
    };

    it('sets a __Host- cookie: Secure, HttpOnly, SameSite=Strict, Path=/, no Domain, no lifetime of its own', async () => {
      if (!db) return;
      const s = await nextSignIn();
      expect(s.setCookie).toMatch(/^__Host-mailsvc_panel=[A-Za-z0-9_-]{43}; Path=\/; HttpOnly; SameSite=Strict; Secure$/);
      expect(s.setCookie).not.toMatch(/domain=/i);
    });

    it('accepts the cookie on the panel routes only, never in place of Basic or Bearer', async () => {
      if (!db) return;
      const s = await nextSignIn();
      expect((await req(t, 'GET', '/panel/api/domains', { cookie: s.cookie })).status).toBe(200);
      for (const url of ['/domains', '/health/details', '/auth/mfa', '/admin/audit']) {
        const direct = await req(t, 'GET', url, { cookie: s.cookie, csrf: s.csrf });
        expect(direct.status, url).toBe(401);
      }
      // Nor does the proxy reach the panel itself or the API documents.
      expect((await req(t, 'GET', '/panel/api/panel/session', { cookie: s.cookie })).status).toBe(404);
      expect((await req(t, 'GET', '/panel/api/openapi.json', { cookie: s.cookie })).status).toBe(404);
    });

    it('refuses a state change without the CSRF token, with a wrong one, or from another site', async () => {
      if (!db) return;
      const s = await nextSignIn();
      const body = { name: `csrf-${dialect}.example` };
      expect((await req(t, 'POST', '/panel/api/domains', { cookie: s.cookie, body })).status).toBe(403);
      expect((await req(t, 'POST', '/panel/api/domains', { cookie: s.cookie, body, csrf: 'x'.repeat(43) })).status).toBe(403);
      const other = await nextSignIn();
      expect((await req(t, 'POST', '/panel/api/domains', { cookie: s.cookie, body, csrf: other.csrf })).status).toBe(403);
      expect((await req(t, 'POST', '/panel/api/domains', { cookie: s.cookie, body, csrf: s.csrf, headers: { 'sec-fetch-site': 'cross-site' } })).status).toBe(403);
      expect((await req(t, 'POST', '/panel/api/domains', { cookie: s.cookie, body, csrf: s.csrf, headers: { origin: 'https://evil.example' } })).status).toBe(403);
      expect((await req(t, 'GET', `/panel/api/domains/${body.name}`, { cookie: s.cookie })).status).toBe(404);
      const ok = await req(t, 'POST', '/panel/api/domains', { cookie: s.cookie, body, csrf: s.csrf });
      expect(ok.status).toBe(201);
      // The change is audited as the administrator's, from the browser's address.
      const audit = await req(t, 'GET', `/panel/api/admin/audit?action=${encodeURIComponent('POST /domains')}`, { cookie: s.cookie });
      expect((audit.body.items as { target: string }[]).some((e) => e.target === body.name)).toBe(true);
    });

    it('asks for a fresh second factor before a destructive action, and only then does it', async () => {
      if (!db) return;
      const s = await nextSignIn();
      const name = `fresh-${dialect}.example`;
      expect((await req(t, 'POST', '/panel/api/domains', { cookie: s.cookie, csrf: s.csrf, body: { name } })).status).toBe(201);
      clock.advance(301_000);
      // A forged marker from outside changes nothing: only the process knows its value.
      const refused = await req(t, 'DELETE', `/panel/api/domains/${name}`, { cookie: s.cookie, csrf: s.csrf, headers: { 'x-mailsvc-panel-call': 'guess.1' } });
      expect(refused.status).toBe(403);
      expect(refused.headers['x-mailsvc-reauth']).toBe('required');
      for (const [method, url, body] of [['DELETE', '/auth/mfa/totp', undefined], ['PUT', '/admin/firewall', { 'firewall-enabled': 'no' }], ['DELETE', '/admin/queue?sender=a%40b.example', undefined]] as const) {
        const r = await req(t, method, `/panel/api${url}`, { cookie: s.cookie, csrf: s.csrf, ...(body ? { body } : {}) });
        expect(r.headers['x-mailsvc-reauth'], url).toBe('required');
      }
      expect((await req(t, 'GET', '/panel/api/auth/mfa', { cookie: s.cookie })).body.totp_enabled).toBe(true);
      expect((await req(t, 'GET', `/panel/api/domains/${name}`, { cookie: s.cookie })).status).toBe(200);
      // The same token over the API itself is not held to the panel's rule.
      const fresh = await nextSignIn();
      expect((await req(t, 'DELETE', `/panel/api/domains/${name}`, { cookie: fresh.cookie, csrf: fresh.csrf })).status).toBe(204);
    });

    it('ends a session idle too long, one past its absolute lifetime, and one signed out', async () => {
      if (!db) return;
      const idle = await nextSignIn();
      clock.advance(901_000);
      expect((await req(t, 'GET', '/panel/session', { cookie: idle.cookie })).status).toBe(401);

      const busy = await nextSignIn();
      for (let i = 0; i < 5; i++) {
        clock.advance(800_000);
        const r = await req(t, 'GET', '/panel/session', { cookie: busy.cookie });
        expect(r.status, `after ${(i + 1) * 800} s`).toBe(i < 4 ? 200 : 401);
      }

      const out = await nextSignIn();
      const token = await req(t, 'GET', '/panel/api/auth/mfa', { cookie: out.cookie });
      expect(token.status).toBe(200);
      expect((await req(t, 'POST', '/panel/session/logout', { cookie: out.cookie })).status).toBe(403); // no CSRF token
      const bye = await req(t, 'POST', '/panel/session/logout', { cookie: out.cookie, csrf: out.csrf });
      expect(bye.status).toBe(200);
      expect(String(bye.headers['set-cookie'])).toMatch(/^__Host-mailsvc_panel=; .*Max-Age=0/);
      expect((await req(t, 'GET', '/panel/session', { cookie: out.cookie })).status).toBe(401);
      // The sign-out is in the audit log, as the API's logout is.
      const after = await nextSignIn();
      const audit = await req(t, 'GET', `/panel/api/admin/audit?action=${encodeURIComponent('POST /panel/session/logout')}`, { cookie: after.cookie });
      expect(audit.body.total).toBeGreaterThanOrEqual(1);
    });

    it('counts failed panel sign-ins in the API lockout, and the other way round', async () => {
      if (!db) return;
      const ip = `203.0.113.${DIALECTS.indexOf(dialect) + 10}`;
      for (let i = 0; i < 4; i++) {
        const r = await req(t, 'POST', '/panel/session/login', { body: { username: 'admin', password: 'wrong' }, ip });
        expect(r.status).toBe(401);
      }
      const api = await t.app.inject({ method: 'POST', url: '/auth/login', payload: { username: 'admin', password: 'wrong' }, remoteAddress: ip });
      expect(api.statusCode).toBe(401);
      const blocked = await req(t, 'POST', '/panel/session/login', { body: { username: 'admin', password: 'correct horse battery staple' }, ip });
      expect(blocked.status).toBe(429);
      expect(Number(blocked.headers['retry-after'])).toBeGreaterThan(0);
      const viaApi = await t.app.inject({ method: 'POST', url: '/auth/login', payload: { username: 'admin', password: 'correct horse battery staple' }, remoteAddress: ip });
      expect(viaApi.statusCode).toBe(429);
    });

    it('serves the built panel with a strict CSP, compressed, and no inline script', async () => {
      if (!db) return;
      const page = await req(t, 'GET', '/panel/', { headers: { 'accept-encoding': 'identity' } });
      expect(page.status).toBe(200);
      expect(page.headers['content-security-policy']).toMatch(/default-src 'none'; script-src 'self'; style-src 'self'/);
      expect(page.raw).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>/);
      expect(page.raw).not.toMatch(/https?:\/\//);
      const asset = /src="(\/panel\/assets\/[^"]+\.js)"/.exec(page.raw)?.[1];
      expect(asset).toBeDefined();
      const br = await t.app.inject({ method: 'GET', url: asset!, headers: { 'accept-encoding': 'gzip, br' } });
      expect(br.headers['content-encoding']).toBe('br');
      expect(br.headers['cache-control']).toMatch(/immutable/);
      const gz = await t.app.inject({ method: 'GET', url: asset!, headers: { 'accept-encoding': 'gzip' } });
      expect(gz.headers['content-encoding']).toBe('gzip');
      expect((await req(t, 'GET', '/panel/assets/nothing.js')).status).toBe(404);
      expect((await call(t, 'GET', '/panel/../openapi.json', '')).status).not.toBe(500);
    });
  });
}
