import type { FastifyInstance } from 'fastify';
import type { Infra } from '../../infra/index.js';
import type { RouteKit } from '../route-types.js';
import { DoctorService } from './doctor.service.js';
import type { DoctorSources } from './doctor.service.js';

export { doctorCommands } from './commands.js';
export type { DoctorService, DoctorSources } from './doctor.service.js';
export type { DoctorReport, DoctorCheck } from './schema.js';

/** The host's status, checked: `mailsvc doctor`, GET /admin/doctor (docs/doctor.md). */
export function createDoctorModule(infra: Pick<Infra, 'settings' | 'db' | 'schema' | 'dialect' | 'helper' | 'clock'>, deps: { sources: DoctorSources }) {
  const service = new DoctorService({ settings: infra.settings, db: infra.db, schema: infra.schema, dialect: infra.dialect, helper: infra.helper, clock: infra.clock, sources: deps.sources });
  return {
    service,
    routes: async (app: FastifyInstance, kit: RouteKit) => (await import('./routes.js')).doctorRoutes(app, service, kit),
  };
}
export type DoctorModule = ReturnType<typeof createDoctorModule>;
