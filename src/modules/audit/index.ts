import type { Command } from 'commander';
import type { FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import type { Db } from '../../db/database.js';
import type { Clock } from '../../shared/clock.js';
import type { AdminHooks, RouteErrors } from '../route-types.js';
import { AuditRepository } from './audit.repository.js';
import { AuditService } from './audit.service.js';
import { auditCommands } from './commands.js';
import type { OpenAudit } from './commands.js';
import { auditRoutes } from './routes.js';

export { AuditService } from './audit.service.js';
export { summarize, isSecretName, REDACTED } from './redact.js';
export { auditCommands } from './commands.js';
export type { OpenAudit } from './commands.js';
export type { AuditEntry, AuditFilter, AuditPage, AuditRecord, AuditSummary } from './schema.js';

export type AuditDeps = { db: Db; clock: Clock; log: Logger; retentionDays: number };

/** The audit log: its service, its route (`GET /admin/audit`) and its commands (`mailsvc audit …`). */
export function createAuditModule(deps: AuditDeps) {
  const service = new AuditService(new AuditRepository(deps.db), deps.clock, deps.log, deps.retentionDays);
  return {
    service,
    routes: (app: FastifyInstance, hooks: AdminHooks, errors: RouteErrors) => auditRoutes(app, service, hooks, errors),
    commands: (program: Command, open: OpenAudit) => auditCommands(program, open),
  };
}

export type AuditModule = ReturnType<typeof createAuditModule>;
