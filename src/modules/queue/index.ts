import type { FastifyInstance } from 'fastify';
import type { Infra } from '../../infra/index.js';
import type { RouteKit } from '../route-types.js';
import { QueueService } from './queue.service.js';

export { queueCommands } from './commands.js';
export type { QueueService } from './queue.service.js';
export type { QueueCounts, QueueEntry } from './schema.js';

/** What other modules (metrics) may ask of the queue: its length per queue name. */
export type QueueCounter = Pick<QueueService, 'counts'>;

export function createQueueModule(infra: Pick<Infra, 'settings' | 'helper' | 'clock'>) {
  const service = new QueueService(infra.settings.helper.postfixConfigDir, infra.helper, infra.clock);
  return {
    service,
    routes: async (app: FastifyInstance, kit: RouteKit) => (await import('./routes.js')).queueRoutes(app, service, kit),
  };
}
export type QueueModule = ReturnType<typeof createQueueModule>;
