import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { ADMIN_SECURITY as security } from '../route-types.js';
import type { RouteKit } from '../route-types.js';
import { pageOf } from '../paging.schema.js';
import { MailboxStatsPageSchema, MailboxesQuery, StatsQuery, StatsSummarySchema, TimelineQuery, TimelineSchema } from './schema.js';
import type { StatsService } from './stats.service.js';

const RANGE_NOTE = 'Range: `from` (default 30 days before `to`) to `to` (exclusive, default now), ISO 8601, UTC unless an offset is given; optionally one `mailbox` and one `direction` (inbound, outbound, local).';

export function statsRoutes(app: FastifyInstance, stats: StatsService, { hooks, errors }: RouteKit): void {
  const r = app.withTypeProvider<TypeBoxTypeProvider>();
  const tags = ['stats'];
  const config = { scope: 'stats' as const };
  r.get('/stats/summary', {
    onRequest: hooks.admin,
    config,
    schema: {
      tags, security, summary: 'Traffic totals per direction for a time range',
      description: `Messages and bytes per direction from the collected Postfix log (\`mailsvc stats collect\`). A row is one message as one mailbox saw it. ${RANGE_NOTE}`,
      querystring: StatsQuery, response: { 200: StatsSummarySchema, ...errors(400, 401, 403, 422, 503) },
    },
    handler: (req) => stats.summary(req.query),
  });
  r.get('/stats/mailboxes', {
    onRequest: hooks.admin,
    config,
    schema: {
      tags, security, summary: 'Traffic per mailbox for a time range, busiest first',
      description: `A page of mailboxes, each with messages and bytes per direction. ${RANGE_NOTE}`,
      querystring: MailboxesQuery, response: { 200: MailboxStatsPageSchema, ...errors(400, 401, 403, 422, 503) },
    },
    handler: (req) => stats.mailboxes(req.query, pageOf(req.query)),
  });
  r.get('/stats/timeline', {
    onRequest: hooks.admin,
    config,
    schema: {
      tags, security, summary: 'Traffic per hour or per day for a time range',
      description: `Messages and bytes per direction in each hour or UTC day that has traffic (empty buckets are left out). ${RANGE_NOTE}`,
      querystring: TimelineQuery, response: { 200: TimelineSchema, ...errors(400, 401, 403, 422, 503) },
    },
    handler: (req) => stats.timeline(req.query),
  });
}
