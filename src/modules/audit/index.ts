import type { FastifyInstance } from 'fastify';
import type { Infra } from '../../infra/index.js';
import type { RouteKit } from '../route-types.js';
import { AuditRepository } from './audit.repository.js';
import { AuditService } from './audit.service.js';

export type { AuditService } from './audit.service.js';
export { summarize, isSecretName, REDACTED } from './redact.js';
export { auditCommands } from './commands.js';
export type { OpenAudit } from './commands.js';
export type { AuditEntry, AuditFilter, AuditPage, AuditRecord, AuditSummary } from './schema.js';

/** The audit log: its service and its route (`GET /admin/audit`); its commands are in commands.ts. */
export function createAuditModule(infra: Pick<Infra, 'db' | 'clock' | 'log' | 'settings'>) {
  const service = new AuditService(new AuditRepository(infra.db), infra.clock, infra.log, infra.settings.auditRetentionDays);
  return {
    service,
    routes: async (app: FastifyInstance, kit: RouteKit) => (await import('./routes.js')).auditRoutes(app, service, kit.hooks, kit.errors),
  };
}
export type AuditModule = ReturnType<typeof createAuditModule>;
