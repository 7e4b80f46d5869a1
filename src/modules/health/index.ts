import type { FastifyInstance } from 'fastify';
import type { Infra } from '../../infra/index.js';
import type { RouteKit } from '../route-types.js';
import { HealthService } from './health.service.js';
import type { ComponentProbe } from '../report/index.js';
import type { BackupSummary, TlsSummary } from './health.service.js';

export type { BackupSummary, HealthDetails, HealthService, TlsSummary } from './health.service.js';

export function createHealthModule(
  infra: Pick<Infra, 'db' | 'schema' | 'dialect' | 'redis' | 'clock'>,
  deps: { components?: ComponentProbe; backups?: () => Promise<BackupSummary | null>; timeoutMs?: number; tls?: () => Promise<TlsSummary>; certificates?: () => Promise<{ name: string; days_left: number }[]> } = {},
) {
  const service = new HealthService(infra.db, infra.schema, infra.dialect, infra.redis, infra.clock, deps.components, deps.backups, deps.timeoutMs, deps.tls, deps.certificates);
  return { service, routes: async (app: FastifyInstance, kit: RouteKit) => (await import('./routes.js')).healthRoutes(app, service, kit.hooks, kit.errors) };
}
export type HealthModule = ReturnType<typeof createHealthModule>;
