import type { FastifyInstance } from 'fastify';
import type { Infra } from '../../infra/index.js';
import { AppError } from '../../shared/errors.js';
import { SERVICE_VERSION } from '../../shared/version.js';
import type { JobRunner } from '../jobs/index.js';
import type { RouteKit } from '../route-types.js';
import { UPDATE_JOB } from '../updates/index.js';
import type { ApplyUpdateInput, UpdateCheck, UpdatesModule } from '../updates/index.js';
import { SettingsRepository } from './settings.repository.js';
import { SettingsService } from './settings.service.js';

export type { SettingsService } from './settings.service.js';
export type { SettingsView } from './schema.js';
export { settingsCommands } from './commands.js';

/** What an update check must allow before a job is queued: a newer release, or an allowed and asked-for downgrade. */
export function refuseUnlessApplicable(check: UpdateCheck, input: ApplyUpdateInput): void {
  if (!check.update_available && !check.downgrade) throw new AppError('conflict', `${check.current_version} is already the newest release on the ${check.channel} channel`);
  if (check.downgrade && !check.downgrade_allowed) {
    throw new AppError('conflict', `refusing to go back from ${check.current_version} to ${check.available_version}: this database has migrations that release does not know`);
  }
  if (check.downgrade && input.allow_downgrade !== true) {
    throw new AppError('conflict', `${check.available_version} is older than ${check.current_version}: ask for allow_downgrade to install it`);
  }
}

/** The stored run-time settings alone (what the updater asks for the channel). */
export function createSettingsStore(infra: Pick<Infra, 'db' | 'clock' | 'settings'>): SettingsService {
  return new SettingsService(new SettingsRepository(infra.db), infra.settings.updates, infra.clock, SERVICE_VERSION);
}

/**
 * Settings: the run-time settings (update channel, auto-updates), and the
 * update check and job behind /admin/settings.
 */
export function createSettingsModule(infra: Pick<Infra, 'db' | 'clock' | 'settings' | 'helper'>, deps: { updates: () => Promise<UpdatesModule>; jobs: () => Promise<JobRunner> }) {
  const service = createSettingsStore(infra);
  const checkUpdate = async (): Promise<UpdateCheck> => (await deps.updates()).service.check();
  /** Queues the job and has the helper start mailsvc-update@<id>.service: the job restarts this service, so it cannot run in it. */
  const startUpdate = async (input: ApplyUpdateInput): Promise<{ job_id: string }> => {
    refuseUnlessApplicable(await checkUpdate(), input);
    const runner = await deps.jobs();
    const id = await runner.enqueue(UPDATE_JOB, input);
    await infra.helper.run('mailsvc-job-start', ['update', id]);
    return { job_id: id };
  };
  return {
    service,
    checkUpdate,
    startUpdate,
    routes: async (app: FastifyInstance, kit: RouteKit) => (await import('./routes.js')).settingsRoutes(app, { service, checkUpdate, startUpdate }, kit),
  };
}
export type SettingsModule = ReturnType<typeof createSettingsModule>;
