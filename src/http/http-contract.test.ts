import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase } from '../../test/helpers/dialects.js';
import type { TestDatabase } from '../../test/helpers/dialects.js';
import { ADMIN_PASSWORD, startTestApp } from '../../test/helpers/app.js';
import type { TestApp } from '../../test/helpers/app.js';
import { loadSchema } from '../app/schema.js';
import { buildApp } from './app.js';
import { compilersOf } from './lazy-compilers.js';
import type { RouteEntry } from './route-catalog.js';

const LATEST_SCHEMA = (await loadSchema()).latest;

type OpenApi = {
  openapi: string;
  paths: Record<string, Record<string, { requestBody?: unknown; responses: Record<string, unknown> }>>;
  components: { securitySchemes: object };
};

describe('HTTP contract: OpenAPI, docs, error bodies, health', () => {
  let db: TestDatabase;
  let t: TestApp;
  beforeAll(async () => {
    db = await createTestDatabase('sqlite');
    t = await startTestApp(db.url, { MAILSVC_MFA_REQUIRED: 'no' });
  });
  afterAll(async () => {
    await t.close();
    await db.drop();
  });
  const raw = (url: string, payload: string | Buffer, contentType = 'application/json') =>
    t.app.inject({ method: 'POST', url, payload, headers: { 'content-type': contentType } });

  /** Every operation of the document the service serves, as `METHOD /path/{param}`. */
  const documented = async (): Promise<{ doc: OpenApi; ops: string[] }> => {
    const res = await t.app.inject({ method: 'GET', url: '/openapi.json' });
    expect(res.statusCode).toBe(200);
    const doc = res.json<OpenApi>();
    return { doc, ops: Object.entries(doc.paths).flatMap(([p, m]) => Object.keys(m).map((verb) => `${verb.toUpperCase()} ${p}`)) };
  };

  it('/openapi.json is OpenAPI 3.1 and documents every route the modules register, and nothing else', async () => {
    const { doc, ops } = await documented();
    expect(doc.openapi).toBe('3.1.0');
    // The same modules, registered again with the route catalog on: what the service really serves.
    const routes: RouteEntry[] = [];
    const again = await buildApp(t.ctx.modules, { routes });
    try {
      const served = routes.filter((r) => !r.hidden && r.method !== 'HEAD').map((r) => `${r.method} ${r.url.replace(/:([A-Za-z0-9_]+)/g, '{$1}')}`);
      expect(new Set(ops).size).toBe(ops.length);
      expect([...ops].sort()).toEqual([...served].sort());
      // Every module that says it serves HTTP does, and only those modules register routes.
      const serving = (await t.ctx.modules.http()).map((h) => h.manifest.name);
      expect([...new Set(routes.filter((r) => !r.hidden).flatMap((r) => (r.module ? [r.module] : [])))].sort()).toEqual([...serving].sort());
    } finally {
      await again.close();
    }
    // The new routes carry their schemas: the key's body, the answer shown once, the scopes as an enum.
    const create = doc.paths['/auth/api-keys']?.post as { requestBody: unknown; responses: Record<string, unknown> };
    expect(JSON.stringify(create.requestBody)).toContain('"expires_at"');
    expect(JSON.stringify(create.requestBody)).toContain('"enum":["read","accounts"');
    expect(JSON.stringify(create.responses['201'])).toContain('"key"');
    const regen = doc.paths['/auth/mfa/recovery-codes']?.post as { responses: Record<string, unknown> };
    expect(JSON.stringify(regen.responses['200'])).toContain('"recovery_codes"');
    const queueList = doc.paths['/admin/queue']?.get as { responses: Record<string, unknown> };
    expect(JSON.stringify(queueList.responses['200'])).toContain('"delay_reason"');
    const limits = doc.paths['/admin/limits']?.patch as { requestBody: unknown; responses: Record<string, unknown> };
    expect(JSON.stringify(limits.requestBody)).toContain('"message-size-limit"');
    expect(JSON.stringify(limits.responses['200'])).toContain('"fail2ban-recidive-bantime"');
    expect(doc.components.securitySchemes).toMatchObject({ bearer: { scheme: 'bearer' }, basic: { scheme: 'basic' } });
    const login = doc.paths['/auth/login']?.post as { responses: Record<string, unknown> };
    expect(Object.keys(login.responses)).toEqual(expect.arrayContaining(['200', '401', '403', '422', '429']));
  });

  it("every route's validators and serializers compile (they are built lazily, on first use: a broken schema must fail here, not as a 500)", async () => {
    const again = await buildApp(t.ctx.modules);
    try {
      const c = compilersOf(again);
      expect(c).toBeDefined();
      // Nothing served yet: every compiled function still waits (the idle service holds none of them).
      const waiting = c?.pending() ?? 0;
      expect(waiting).toBeGreaterThan(100);
      expect(c?.compileAll()).toBe(waiting);
      expect(c?.pending()).toBe(0);
      // After forcing, requests still validate and serialize the same way.
      const res = await again.inject({ method: 'POST', url: '/auth/login', payload: { username: 'admin', password: 42 } });
      expect(res.statusCode).toBe(422);
    } finally {
      await again.close();
    }
  });

  it('every documented operation answers a request without credentials with a status the document gives it, never as an unknown route', async () => {
    const { doc } = await documented();
    for (const [path, methods] of Object.entries(doc.paths)) {
      for (const [verb, op] of Object.entries(methods)) {
        const url = path.replace(/\{[^}]+\}/g, 'x1');
        const res = await t.app.inject({ method: verb.toUpperCase() as 'GET', url, ...(op.requestBody ? { payload: {} } : {}) });
        const what = `${verb.toUpperCase()} ${path} answered ${res.statusCode} ${res.body.slice(0, 120)}`;
        expect(res.json<{ detail?: string }>().detail ?? '', what).not.toMatch(/^Not found: /);
        expect(Object.keys(op.responses), what).toContain(String(res.statusCode));
      }
    }
  });

  it('/docs serves the API docs page', async () => {
    const res = await t.app.inject({ method: 'GET', url: '/docs/' });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toMatch(/text\/html/);
  });

  it('unparseable JSON is 400 "Malformed JSON body"', async () => {
    for (const body of ['{', '{"username":', 'nul']) {
      const res = await raw('/auth/login', body);
      expect(res.statusCode, body).toBe(400);
      expect(res.json()).toEqual({ detail: 'Malformed JSON body' });
    }
  });

  it('a body over 1 MiB is 413', async () => {
    const res = await raw('/auth/login', JSON.stringify({ username: 'admin', password: 'x'.repeat(1024 * 1024) }));
    expect(res.statusCode).toBe(413);
    expect(res.json().detail).toMatch(/1 MiB/);
  });

  it('schema violations are 422 naming the field; types are not coerced', async () => {
    const missing = await raw('/auth/login', JSON.stringify({ username: 'admin' }));
    expect(missing.statusCode).toBe(422);
    expect(missing.json().errors).toEqual([{ path: 'body.password', message: "must have required property 'password'" }]);
    const wrongType = await raw('/auth/login', JSON.stringify({ username: 'admin', password: 12345 }));
    expect(wrongType.statusCode).toBe(422);
    expect(wrongType.json().errors[0].path).toBe('body.password');
    const tooLong = await raw('/auth/mfa/verify', JSON.stringify({ challenge_id: 'x', method: 'totp', code: '1'.repeat(40) }));
    expect(tooLong.statusCode).toBe(422);
  });

  it('unknown fields are a 422 naming them, as the OpenAPI document says (additionalProperties false)', async () => {
    const res = await raw('/auth/login', JSON.stringify({ username: 'admin', password: ADMIN_PASSWORD, remember_me: true }));
    expect(res.statusCode).toBe(422);
    expect(res.json().errors).toEqual([{ path: 'body.remember_me', message: 'is not a known field' }]);
  });

  it('another content type is 415; unknown paths are 404 with a detail', async () => {
    expect((await raw('/auth/login', 'username=admin', 'application/x-www-form-urlencoded')).statusCode).toBe(415);
    const nf = await t.app.inject({ method: 'GET', url: '/nope?x=1' });
    expect(nf.statusCode).toBe(404);
    expect(nf.json()).toEqual({ detail: 'Not found: GET /nope' });
  });

  it('/health is public; /health/details needs the administrator and reports database, schema, Redis, version, uptime', async () => {
    expect((await t.app.inject({ method: 'GET', url: '/health' })).json()).toEqual({ status: 'ok' });
    expect((await t.app.inject({ method: 'GET', url: '/health/details' })).statusCode).toBe(401);
    const res = await t.app.inject({ method: 'GET', url: '/health/details', headers: { authorization: t.basic() } });
    expect(res.statusCode).toBe(200);
    // The service's own parts are fine; the host's daemons may be down here (Rspamd installed and not running): only those may degrade it.
    const body = res.json() as { status: string; degraded_by: string[]; components: Record<string, { status: string }> };
    const down = Object.entries(body.components).filter(([, c]) => c.status === 'down').map(([name]) => `component ${name}`);
    expect(body.degraded_by).toEqual(down);
    expect(body.status).toBe(down.length === 0 ? 'ok' : 'degraded');
    expect(res.json()).toMatchObject({
      version: '0.1.0',
      database: { dialect: 'sqlite', reachable: true, schema_version: LATEST_SCHEMA, schema_latest: LATEST_SCHEMA },
      redis: { configured: false, reachable: null },
    });
    expect(res.json().uptime_seconds).toBeGreaterThanOrEqual(0);
  });
});

describe('HTTP contract: what the property test found', () => {
  let db: TestDatabase;
  let t: TestApp;
  beforeAll(async () => {
    db = await createTestDatabase('sqlite');
    t = await startTestApp(db.url, { MAILSVC_TRUSTED_PROXIES: '127.0.0.1/32', MAILSVC_API_AUTH_FAIL_LIMIT: '2' });
  });
  afterAll(async () => {
    await t.close();
    await db.drop();
  });

  it('a NUL character anywhere in a JSON body is 400 (PostgreSQL cannot store it)', async () => {
    const res = await t.app.inject({ method: 'POST', url: '/auth/logout', payload: '{"access_token":"a\\u0000.b"}', headers: { 'content-type': 'application/json' } });
    expect(res.statusCode).toBe(400);
    expect(res.json()).toEqual({ detail: 'NUL characters are not allowed in the body' });
  });

  it('Admin endpoints check credentials before the body: no credentials with a bad body is 401', async () => {
    for (const payload of ['{}', '{', 'x'.repeat(2 * 1024 * 1024)]) {
      const res = await t.app.inject({ method: 'PUT', url: '/auth/mfa/providers', payload, headers: { 'content-type': 'application/json' } });
      expect(res.statusCode).toBe(401);
    }
  });

  it('a malformed URL keeps the error shape', async () => {
    const res = await t.app.inject({ method: 'POST', url: '/auth/%E0%A4%A' });
    expect(res.statusCode).toBe(400);
    expect(res.json()).toEqual({ detail: 'Malformed URL' });
  });

  it('X-Forwarded-For that is not an IP address is not taken as the client address', async () => {
    const attempt = (xff: string) =>
      t.app.inject({ method: 'POST', url: '/auth/login', payload: { username: 'admin', password: 'x' }, headers: { 'x-forwarded-for': xff } });
    expect((await attempt('1.2.3.4 from 6.6.6.6')).statusCode).toBe(401);
    expect((await attempt('junk-1')).statusCode).toBe(401);
    expect((await attempt('junk-2')).statusCode).toBe(429);
    const { readFileSync } = await import('node:fs');
    expect(readFileSync(t.settings.authLog, 'utf8')).not.toMatch(/6\.6\.6\.6|junk/);
  });
});
