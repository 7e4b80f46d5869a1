import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import type { Static } from '@sinclair/typebox';
import type { Db } from '../../db/database.js';
import { ADMIN_SECURITY as security } from '../route-types.js';
import type { RouteKit } from '../route-types.js';
import { pageOf, PagedOf, PageQuery } from '../paging.schema.js';
import { savedReport } from './saved-report.js';

export const DeliverabilityStatusSchema = Type.Object(
  {
    domain: Type.String(),
    report_id: Type.String(),
    checked_at: Type.String({ format: 'date-time' }),
    mail_host: Type.String(),
    ok: Type.Boolean({ description: 'no check failed (warnings allowed)' }),
    counts: Type.Object({ pass: Type.Integer(), warn: Type.Integer(), fail: Type.Integer(), unknown: Type.Integer() }),
    failed: Type.Array(Type.String(), { description: 'names of the checks that failed' }),
  },
  { title: 'DeliverabilityStatus' },
);
export type DeliverabilityStatus = Static<typeof DeliverabilityStatusSchema>;
export const DeliverabilityStatusPageSchema = PagedOf(DeliverabilityStatusSchema, 'DeliverabilityStatusPage');

/** The newest saved report of each existing domain (by domain name), in brief. */
export async function latestPerDomain(db: Db, page: { limit: number; offset: number }): Promise<{ items: DeliverabilityStatus[]; total: number }> {
  const newest = db.selectFrom('deliverability_reports').select(['domain']).select((eb) => eb.fn.max('created_at').as('at')).groupBy('domain');
  const base = db
    .selectFrom(newest.as('n'))
    .innerJoin('domains as d', 'd.name', 'n.domain');
  const total = Number((await base.select((eb) => eb.fn.countAll().as('c')).executeTakeFirst())?.c ?? 0);
  const rows = await base
    .innerJoin('deliverability_reports as r', (j) => j.onRef('r.domain', '=', 'n.domain').onRef('r.created_at', '=', 'n.at'))
    .select(['r.domain', 'r.report_json', 'r.id'])
    .orderBy('r.domain')
    .orderBy('r.id')
    .limit(page.limit)
    .offset(page.offset)
    .execute();
  const items: DeliverabilityStatus[] = [];
  const seen = new Set<string>();
  for (const row of rows) {
    // Two reports saved in the same millisecond: the page keeps one per domain.
    if (seen.has(row.domain)) continue;
    seen.add(row.domain);
    const r = savedReport(row.report_json);
    items.push({ domain: r.domain, report_id: r.id, checked_at: r.checked_at, mail_host: r.mail_host, ok: r.ok, counts: r.counts, failed: r.checks.filter((c) => c.status === 'fail').map((c) => c.name) });
  }
  return { items, total };
}

/** GET /dns/deliverability: every domain's last deliverability result at once (the panel's dashboard). API-key scope `dns`. */
export function dnsStatusRoutes(app: FastifyInstance, db: Db, kit: RouteKit): void {
  const r = app.withTypeProvider<TypeBoxTypeProvider>();
  const { hooks, errors } = kit;
  r.get('/dns/deliverability', {
    onRequest: hooks.admin,
    config: { scope: 'dns' as const },
    schema: {
      tags: ['dns'], security, querystring: Type.Object(PageQuery, { additionalProperties: false }),
      summary: 'The newest saved deliverability report of each domain, in brief',
      description: 'One item per domain that has a saved report (domains without one are left out), by domain name: when it was checked, whether no check failed, the counts of pass, warn (a recommendation), fail and unknown (could not determine), and the names of the failed checks. The whole report is at GET /domains/{d}/deliverability.',
      response: { 200: DeliverabilityStatusPageSchema, ...errors(400, 401, 403, 422, 429) },
    },
    handler: async (req) => {
      const page = pageOf(req.query);
      return { ...(await latestPerDomain(db, page)), ...page };
    },
  });
}
