import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { DIALECTS, createTestDatabase, dialectAvailable } from '../../test/helpers/dialects.js';
import type { TestDatabase } from '../../test/helpers/dialects.js';
import { startTestApp } from '../../test/helpers/app.js';
import type { TestApp } from '../../test/helpers/app.js';
import { call, login } from '../../test/helpers/flows.js';

type Json = Record<string, unknown>;

for (const dialect of DIALECTS) {
  describe(`the audit hook and GET /admin/audit (${dialect})`, async () => {
    const available = await dialectAvailable(dialect);
    let db: TestDatabase;
    let t: TestApp;
    const api = (method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE', url: string, body?: unknown, auth?: string) => call(t, method, url, auth ?? t.basic(), body);
    const entries = async (query = '') => (await api('GET', `/admin/audit${query}`)).body as { items: Json[]; total: number; limit: number; offset: number };
    // A record is written once the answer has gone out: wait for it rather than race it.
    const recorded = (n: number) => expect.poll(async () => (await entries()).total, { timeout: 30_000 }).toBe(n);
    beforeEach(async () => {
      if (!available) return;
      db = await createTestDatabase(dialect);
      t = await startTestApp(db.url, { MAILSVC_MFA_REQUIRED: 'no' }, { kicker: { kick: async () => ({ kicked: true, detail: 'recorded' }) } });
    });
    afterEach(async () => {
      await t?.close();
      await db?.drop();
    });

    it.skipIf(!available)('records who, from where, what and the result of each change; reads are not recorded', async () => {
      const res = await t.app.inject({ method: 'POST', url: '/domains', payload: { name: 'example.org' }, headers: { authorization: t.basic() }, remoteAddress: '203.0.113.7' });
      expect(res.statusCode).toBe(201);
      expect((await api('POST', '/domains', { name: 'example.org' })).status).toBe(409);
      expect((await api('POST', '/domains', { name: 42 })).status).toBe(422);
      expect((await api('DELETE', '/domains/nosuch.org')).status).toBe(404);
      expect((await api('GET', '/domains')).status).toBe(200);
      await recorded(4);
      const page = await entries();
      expect(page).toMatchObject({ total: 4, limit: 50, offset: 0 });
      expect(page.items.map((e) => [e.action, e.target, e.result])).toEqual([
        ['DELETE /domains/:domain', 'nosuch.org', 'not_found'],
        ['POST /domains', null, 'validation'],
        ['POST /domains', 'example.org', 'conflict'],
        ['POST /domains', 'example.org', 'ok'],
      ]);
      expect(page.items[3]).toMatchObject({ actor: 'admin', token_id: null, source: '203.0.113.7', summary: { name: 'example.org' } });
      expect(page.items[3]!.at).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    });

    it.skipIf(!available)('a Bearer token is recorded by its id; logout is recorded; requests that never authenticated are not', async () => {
      const signIn = await login(t);
      const token = String(signIn.body.access_token);
      const tokenId = token.split('.')[0];
      expect((await api('POST', '/domains', { name: 'example.org' }, `Bearer ${token}`)).status).toBe(201);
      expect((await api('POST', '/domains', { name: 'example.net' }, 'Basic bm9ib2R5Ondyb25n')).status).toBe(401);
      expect((await login(t, 'wrong password')).status).toBe(401);
      expect((await t.app.inject({ method: 'POST', url: '/auth/logout', headers: { authorization: `Bearer ${token}` } })).statusCode).toBe(200);
      await recorded(2);
      const page = await entries();
      expect(page.items.map((e) => [e.action, e.actor, e.token_id, e.result])).toEqual([
        ['POST /auth/logout', 'admin', tokenId, 'ok'],
        ['POST /domains', 'admin', tokenId, 'ok'],
      ]);
    });

    it.skipIf(!available)('filters, pages and refuses a bad time', async () => {
      for (const name of ['a.org', 'b.org', 'c.org']) expect((await api('POST', '/domains', { name })).status).toBe(201);
      expect((await api('DELETE', '/domains/b.org')).status).toBe(204);
      await recorded(4);
      expect((await entries('?action=DELETE%20/domains/:domain')).items.map((e) => e.target)).toEqual(['b.org']);
      expect((await entries('?target=c.org')).total).toBe(1);
      const p = await entries('?limit=2&offset=1');
      expect(p).toMatchObject({ total: 4, limit: 2, offset: 1 });
      expect(p.items.map((e) => e.target)).toEqual(['c.org', 'b.org']);
      const future = new Date(Date.now() + 3_600_000).toISOString();
      expect((await entries(`?from=${future}`)).total).toBe(0);
      expect((await entries(`?to=${future}`)).total).toBe(4);
      const bad = await api('GET', '/admin/audit?from=yesterday');
      expect(bad.status).toBe(422);
      expect(bad.body.detail).toMatch(/from/);
      expect((await t.app.inject({ method: 'GET', url: '/admin/audit' })).statusCode).toBe(401);
    });

    it.skipIf(!available)('an audit write that fails never turns a done change into an error; it is logged', async () => {
      await t.ctx.db.schema.dropTable('audit_log').execute();
      const r = await api('POST', '/domains', { name: 'example.org' });
      expect(r.status).toBe(201);
      expect((await api('GET', '/domains/example.org')).status).toBe(200);
      await expect.poll(() => t.logs.join(''), { timeout: 30_000 }).toContain('audit record could not be written');
    });

    it.skipIf(!available)('GET /admin/audit is in the OpenAPI document with its schemas', async () => {
      const doc = (await t.app.inject({ method: 'GET', url: '/openapi.json' })).json<{ paths: Record<string, Record<string, Json>> }>();
      const op = doc.paths['/admin/audit']?.get;
      expect(op).toBeDefined();
      expect(Object.keys(op?.responses as Json)).toEqual(expect.arrayContaining(['200', '401', '422']));
    });
  });
}
