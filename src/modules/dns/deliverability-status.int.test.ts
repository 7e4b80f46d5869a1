import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp } from '../../../test/helpers/app.js';
import type { TestApp } from '../../../test/helpers/app.js';
import { DIALECTS, createTestDatabase, dialectAvailable } from '../../../test/helpers/dialects.js';
import type { TestDatabase } from '../../../test/helpers/dialects.js';
import { call } from '../../../test/helpers/flows.js';
import type { DeliverabilityReport } from './schema.js';

/** GET /dns/deliverability on every dialect: the newest saved report of each existing domain, in brief. */

const T0 = Date.UTC(2026, 10, 1);
/** A report as saved before checks could warn (no `warn` count), or, with a `warn` status, as saved now. */
type Saved = Omit<DeliverabilityReport, 'counts'> & { counts: { pass: number; warn?: number; fail: number; unknown: number } };
const report = (domain: string, at: number, statuses: Array<'pass' | 'warn' | 'fail' | 'unknown'>): Saved => {
  const checks = statuses.map((status, i) => ({ id: `c${i}`, name: `Check ${i}`, status, detail: status, fix: status === 'pass' ? null : 'fix it' }));
  const counts: Saved['counts'] = { pass: 0, fail: 0, unknown: 0 };
  for (const c of checks) counts[c.status] = (counts[c.status] ?? 0) + 1;
  return { id: `${domain}-${at}`, domain, mail_host: `mail.${domain}`, public_ip: null, checked_at: new Date(at).toISOString(), ok: counts.fail === 0, counts, checks, dns_queries: 3, authoritative: [], milliseconds: 5, changes: [], files: [] };
};

for (const dialect of DIALECTS) {
  describe(`GET /dns/deliverability (${dialect})`, async () => {
    const available = await dialectAvailable(dialect);
    let db: TestDatabase;
    let t: TestApp;
    const get = (url: string) => call(t, 'GET', url, t.basic());

    beforeAll(async () => {
      if (!available) return;
      db = await createTestDatabase(dialect);
      t = await startTestApp(db.url, { MAILSVC_MFA_REQUIRED: 'no' });
      for (const name of ['a.example', 'b.example', 'c.example', 'd.example']) expect((await call(t, 'POST', '/domains', t.basic(), { name })).status).toBe(201);
      const rows = [
        report('a.example', T0, ['fail', 'pass']),
        report('a.example', T0 + 60_000, ['pass', 'pass', 'unknown']),
        report('b.example', T0 + 5_000, ['fail', 'fail', 'pass']),
        report('c.example', T0 + 7_000, ['warn', 'pass']),
        // A domain that no longer exists: left out.
        report('gone.example', T0, ['pass']),
      ];
      await t.ctx.modules.infra.db.insertInto('deliverability_reports').values(rows.map((r) => ({ id: r.id, domain: r.domain, created_at: Date.parse(r.checked_at), failed: r.counts.fail, report_json: JSON.stringify(r) }))).execute();
    });
    afterAll(async () => {
      await t?.close();
      await db?.drop();
    });

    it.skipIf(!available)('one item per domain with a report, the newest one, by name; paged', async () => {
      const all = await get('/dns/deliverability');
      expect(all.status).toBe(200);
      expect(all.body).toEqual({
        total: 3, limit: 50, offset: 0,
        items: [
          { domain: 'a.example', report_id: `a.example-${T0 + 60_000}`, checked_at: new Date(T0 + 60_000).toISOString(), mail_host: 'mail.a.example', ok: true, counts: { pass: 2, warn: 0, fail: 0, unknown: 1 }, failed: [] },
          { domain: 'b.example', report_id: `b.example-${T0 + 5_000}`, checked_at: new Date(T0 + 5_000).toISOString(), mail_host: 'mail.b.example', ok: false, counts: { pass: 1, warn: 0, fail: 2, unknown: 0 }, failed: ['Check 0', 'Check 1'] },
          // A warning (a recommendation) leaves the domain ok.
          { domain: 'c.example', report_id: `c.example-${T0 + 7_000}`, checked_at: new Date(T0 + 7_000).toISOString(), mail_host: 'mail.c.example', ok: true, counts: { pass: 1, warn: 1, fail: 0, unknown: 0 }, failed: [] },
        ],
      });
      const second = await get('/dns/deliverability?limit=1&offset=1');
      expect(second.body).toMatchObject({ total: 3, limit: 1, offset: 1, items: [{ domain: 'b.example' }] });
    });

    it.skipIf(!available)('a bad page is 400, an unknown parameter 422, no credentials 401', async () => {
      expect((await get('/dns/deliverability?limit=0')).status).toBe(400);
      expect((await get('/dns/deliverability?domain=a.example')).status).toBe(422);
      expect((await t.app.inject({ method: 'GET', url: '/dns/deliverability' })).statusCode).toBe(401);
    });

    it.skipIf(!available)('an API key needs the scope dns (or read) for it', async () => {
      const key = async (scopes: string[]) => `Bearer ${String((await call(t, 'POST', '/auth/api-keys', t.basic(), { name: scopes.join('-'), scopes, expires_at: new Date(Date.now() + 86_400_000).toISOString() })).body.key)}`;
      expect((await call(t, 'GET', '/dns/deliverability', await key(['dns']))).status).toBe(200);
      expect((await call(t, 'GET', '/dns/deliverability', await key(['read']))).status).toBe(200);
      expect((await call(t, 'GET', '/dns/deliverability', await key(['stats']))).status).toBe(403);
    });
  });
}
