import type { FastifyInstance } from 'fastify';
import { Type } from '@sinclair/typebox';
import { ADMIN_SECURITY } from '../route-types.js';
import type { AdminHooks, RouteErrors } from '../route-types.js';
import type { HealthService } from './health.service.js';
import { HealthDetailsSchema as Details } from './schema.js';


export function healthRoutes(app: FastifyInstance, health: HealthService, hooks: AdminHooks, errors: RouteErrors): void {
  app.get('/health', {
    schema: {
      tags: ['health'],
      description: 'For load balancers and monitors: no credentials. 200 `ok`, or 503 `degraded` while Redis (when configured) cannot be reached.',
      summary: 'Public health check: 503 "degraded" while Redis (when configured) is out of reach',
      response: { 200: Type.Object({ status: Type.Literal('ok') }), 503: Type.Object({ status: Type.Literal('degraded') }) },
    },
    handler: (_req, reply) => {
      const status = health.live();
      return status === 'ok' ? { status } : reply.status(503).header('retry-after', '5').send({ status });
    },
  });
  app.get('/health/details', {
    onRequest: hooks.admin,
    schema: {
      tags: ['health'],
      description: 'Whether the database and Redis answer, the schema version against the latest one, each component by its own probe, the last backup verify, the service version and uptime. `status` is degraded when any of them is wrong (`degraded_by` says which; a component counts when down, not when unknown). Every part within MAILSVC_PROBE_TIMEOUT_MS. With `components=false` the daemons are not probed (`components` is empty, and `status` covers the database, schema, Redis and backups only): the answer then takes no process start, for a page that shows the status first.',
      summary: 'Database, Redis, schema, components, last backup verify, service version, uptime',
      security: ADMIN_SECURITY,
      querystring: Type.Object({ components: Type.Optional(Type.Union([Type.Literal('true'), Type.Literal('false')], { description: 'false: leave the daemon probes out (default true)' })) }, { additionalProperties: false }),
      response: { 200: Details, ...errors(400, 401, 403, 422, 429) },
    },
    handler: (req) => health.details((req.query as { components?: 'true' | 'false' }).components !== 'false'),
  });
}
