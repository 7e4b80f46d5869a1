import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { Type } from '@sinclair/typebox';
import type { Instruments } from '../../infra/instruments.js';
import { constantTimeEqual } from '../../shared/crypto.js';
import { ADMIN_SECURITY } from '../route-types.js';
import type { RouteKit } from '../route-types.js';

const START = Symbol('metricsStart');
type Timed = FastifyRequest & { [START]?: number };

export function metricsRoutes(app: FastifyInstance, instruments: Instruments, scrapeToken: string | undefined, { hooks, errors }: RouteKit): void {
  // Every request after this point (the metrics module's routes are registered first), by route template: never the raw URL.
  // Callback hooks: no promise per request for a clock reading.
  app.addHook('onRequest', (req: Timed, _reply, done) => {
    req[START] = performance.now();
    done();
  });
  app.addHook('onResponse', (req: Timed, reply: FastifyReply, done) => {
    const started = req[START];
    if (started !== undefined) instruments.httpRequest(req.routeOptions.url ?? 'unmatched', req.method, reply.statusCode, (performance.now() - started) / 1000);
    done();
  });

  const bearer = scrapeToken === undefined ? null : `Bearer ${scrapeToken}`;
  app.get('/metrics', {
    // The scrape token opens this route only; anything else goes through the administrator's checks (and their lockout).
    onRequest: async (req, reply) => {
      if (bearer !== null && typeof req.headers.authorization === 'string' && constantTimeEqual(req.headers.authorization, bearer)) return;
      await hooks.admin.call(app, req, reply);
    },
    schema: {
      tags: ['metrics'],
      security: ADMIN_SECURITY,
      summary: 'Prometheus metrics: HTTP requests, authentication failures and blocks, mail-auth hook and policy decisions, queue length',
      description: 'Prometheus text format (version 0.0.4). Readable by the administrator, or by a scraper sending `Authorization: Bearer <MAILSVC_METRICS_TOKEN>`; never public.',
      response: { 200: Type.String({ description: 'Prometheus text exposition' }), ...errors(401, 403, 429, 503) },
    },
    handler: async (_req, reply) => {
      const out = await instruments.render();
      return reply.type(out?.contentType ?? 'text/plain; version=0.0.4; charset=utf-8').send(out?.text ?? '');
    },
  });
}
