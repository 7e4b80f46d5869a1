import type { FastifyInstance } from 'fastify';
import { Type } from '@sinclair/typebox';
import { ADMIN_SECURITY } from '../route-types.js';
import type { RouteKit } from '../route-types.js';
import type { DoctorService } from './doctor.service.js';
import { DoctorReportSchema } from './schema.js';

/** GET /admin/doctor: the same report as `mailsvc doctor --json`. API-key scope `read`. */
export function doctorRoutes(app: FastifyInstance, doctor: DoctorService, kit: RouteKit): void {
  app.get('/admin/doctor', {
    onRequest: kit.hooks.admin,
    config: { scope: 'read' as const },
    schema: {
      tags: ['health'],
      summary: "The host's status, checked: daemons, drift, timers, backups, DNS, disk, certificates, sockets, clock",
      description:
        'Every check at once, each within MAILSVC_DOCTOR_TIMEOUT_MS: each daemon installed, its version, running and reachable; the limits in force against what mailsvc renders; the systemd timers and their last result; the last backup and its verify; each domain\'s newest deliverability report; disk space; the certificates served on the mail and web ports; the policy service and auth hook answering; the clock against the database. Each line is ok, warn, fail or unknown with what to do (`fix`). Always 200: `status` and `summary` say whether something needs attention. The same JSON as `mailsvc doctor --json`.',
      security: ADMIN_SECURITY,
      querystring: Type.Object({}, { additionalProperties: false }),
      response: { 200: DoctorReportSchema, ...kit.errors(400, 401, 403, 422, 429) },
    },
    handler: () => doctor.run(),
  });
}
