import type { FastifyInstance } from 'fastify';
import type { Infra } from '../../infra/index.js';
import type { QueueCounter } from '../queue/index.js';
import type { RouteKit } from '../route-types.js';

export type { MetricsRegistry, GaugeSample } from '../../infra/index.js';

/**
 * GET /metrics: the process's instruments (HTTP requests, authentication
 * failures and blocks, mail-auth hook and policy decisions) and gauges read
 * at scrape time (the queue length per queue; later features add theirs
 * through `registry`).
 */
export function createMetricsModule(infra: Pick<Infra, 'instruments' | 'settings'>, deps: { queue: QueueCounter }) {
  const registry = infra.instruments;
  registry.addGauge({
    name: 'mailsvc_queue_messages',
    help: 'Messages in each Postfix queue (read from postqueue at scrape time)',
    labelNames: ['queue'],
    read: async () => Object.entries(await deps.queue.counts()).map(([queue, value]) => ({ labels: { queue }, value })),
  });
  return {
    registry,
    routes: async (app: FastifyInstance, kit: RouteKit) => {
      await infra.instruments.enable();
      (await import('./routes.js')).metricsRoutes(app, infra.instruments, infra.settings.stats.metricsToken, kit);
    },
  };
}
export type MetricsModule = ReturnType<typeof createMetricsModule>;
