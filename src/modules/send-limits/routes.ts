import type { FastifyInstance } from 'fastify';
import { ADMIN_SECURITY as security } from '../route-types.js';
import type { AdminHooks, RouteErrors } from '../route-types.js';
import { SyncResult } from './schema.js';
import type { SendLimitsService } from './send-limits.service.js';

export function sendLimitRoutes(app: FastifyInstance, sendLimits: SendLimitsService, hooks: AdminHooks, errors: RouteErrors): void {
  app.post('/accounts/send-limits/sync', {
    onRequest: hooks.admin,
    config: { scope: 'accounts' },
    schema: {
      tags: ['accounts'],
      security,
      description: 'Writes the effective send limits of every account (their own, else the MAILSVC_SEND_RATE_* defaults) to the map the policy service reads, so a change takes effect without a restart.',
      summary: "Push every account's effective send limits to the maps the policy service reads",
      response: { 200: SyncResult, ...errors(401, 403) },
    },
    handler: () => sendLimits.syncAll(),
  });
}
