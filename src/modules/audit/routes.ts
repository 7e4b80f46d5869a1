import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { ADMIN_SECURITY as security } from '../route-types.js';
import type { AdminHooks, RouteErrors } from '../route-types.js';
import { pageOf } from '../paging.schema.js';
import { parseTime } from './audit.service.js';
import type { AuditService } from './audit.service.js';
import { AuditPageSchema, AuditQuery } from './schema.js';

export function auditRoutes(app: FastifyInstance, audit: AuditService, hooks: AdminHooks, errors: RouteErrors): void {
  const r = app.withTypeProvider<TypeBoxTypeProvider>();
  r.get('/admin/audit', {
    onRequest: hooks.admin,
    schema: {
      tags: ['audit'],
      security,
      description: 'Pages through the audit log of state-changing calls (HTTP and CLI), newest first unless `sort` names another order. Filters: action, target, actor (each exact), and a time window. Secrets never appear in it.',
      summary: 'The audit log, newest first, filtered by action, target, actor and time (from inclusive, to exclusive)',
      querystring: AuditQuery,
      response: { 200: AuditPageSchema, ...errors(400, 401, 403, 422) },
    },
    handler: (req) =>
      audit.list(
        { action: req.query.action, target: req.query.target, actor: req.query.actor, from: parseTime(req.query.from, 'from'), to: parseTime(req.query.to, 'to') },
        pageOf(req.query),
        req.query.sort,
      ),
  });
}
