import type { FastifyInstance } from 'fastify';
import type { Infra } from '../../infra/index.js';
import type { RouteKit } from '../route-types.js';
import { StatsRepository } from './stats.repository.js';
import { StatsService } from './stats.service.js';

export { statsCommands } from './commands.js';
export type { StatsService } from './stats.service.js';
export type { StatsSummary, MailboxStats, StatsTimeline, CollectResult } from './schema.js';

export type StatsDeps = {
  /** Days rows are kept: the limit `stats-retention-days` (MAILSVC_STATS_RETENTION_DAYS), read per run. */
  retentionDays: () => number;
};

export function createStatsModule(infra: Pick<Infra, 'db' | 'dialect' | 'clock' | 'settings'>, deps: StatsDeps) {
  const service = new StatsService(new StatsRepository(infra.db, infra.dialect), infra.clock, infra.settings.stats.mailLog, deps.retentionDays);
  return {
    service,
    routes: async (app: FastifyInstance, kit: RouteKit) => (await import('./routes.js')).statsRoutes(app, service, kit),
  };
}
export type StatsModule = ReturnType<typeof createStatsModule>;
