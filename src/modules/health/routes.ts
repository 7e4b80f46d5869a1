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
      description: 'Whether the database and Redis answer, the schema version against the latest one, the service version and uptime.',
      summary: 'Database, Redis, schema and service version, uptime',
      security: ADMIN_SECURITY,
      response: { 200: Details, ...errors(401, 403, 429) },
    },
    handler: () => health.details(),
  });
}
