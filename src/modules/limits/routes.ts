import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { ADMIN_SECURITY as security } from '../route-types.js';
import type { RouteKit } from '../route-types.js';
import type { LimitsService } from './limits.service.js';
import { ApplyReport, LimitsObject, LimitsPatch } from './schema.js';
import type { ApplyReport as Report } from './schema.js';

/** /admin/limits: read, change (any subset, all or nothing) and apply to the daemons. API-key scope `limits`. */
export function limitRoutes(app: FastifyInstance, limits: { service: LimitsService; apply(): Promise<Report> }, kit: RouteKit): void {
  const r = app.withTypeProvider<TypeBoxTypeProvider>();
  const { hooks, errors } = kit;
  const tags = ['limits'];
  const config = { scope: 'limits' as const };

  r.get('/admin/limits', {
    onRequest: hooks.admin,
    config,
    schema: { tags, security, summary: 'Every limit in force: sizes in bytes, durations in seconds', description: 'One object with a key per limit: the stored value, else its default (MAILSVC_<KEY>, else the built-in one).', response: { 200: LimitsObject, ...errors(401, 403, 429) } },
    handler: () => limits.service.refresh(),
  });

  r.patch('/admin/limits', {
    onRequest: hooks.admin,
    config,
    schema: {
      tags, security, summary: 'Change any subset of the limits: an unknown key or a bad value is 422 naming it, and nothing is stored', body: LimitsPatch,
      description: 'Sizes accept bytes or a binary suffix (50M), durations seconds or a suffix (30s, 10m, 4h, 1d, 1w). All or nothing; api-auth-* and send-rate-* hold at once, the rest after POST /admin/limits/apply.',
      response: { 200: LimitsObject, ...errors(400, 401, 403, 413, 422, 429) },
    },
    handler: (req) => limits.service.update(req.body as Record<string, unknown>),
  });

  r.post('/admin/limits/apply', {
    onRequest: hooks.admin,
    config,
    schema: {
      tags, security, summary: 'Render, check and reload Postfix, Rspamd, Dovecot and fail2ban with the limits; any failure restores every file',
      description: 'Each daemon whose configuration location exists is rendered and checked with its own checker, then the running ones are reloaded; a daemon not installed is reported skipped. Any failed check or reload restores every file (409).',
      response: { 200: ApplyReport, ...errors(401, 403, 409, 429, 502, 503) },
    },
    handler: () => limits.apply(),
  });
}
