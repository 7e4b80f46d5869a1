import { progressView } from '../../shared/terminal/progress.js';
import { defineModule } from '../module-types.js';
import type { ModuleContext } from '../module-types.js';
import { settingsCommands } from './commands.js';
import type { SettingsModule } from './index.js';

declare module '../module-types.js' {
  interface ModuleRegistry {
    settings: SettingsModule;
  }
}

/** What `mailsvc settings …` needs: the settings, the check, and a runner that runs update jobs here (in the CLI's process). */
async function settingsCli(ctx: ModuleContext) {
  const [{ createSettingsModule }, { UPDATE_JOB }, jobs, updates] = await Promise.all([import('./index.js'), import('../updates/index.js'), ctx.get('jobs'), ctx.get('updates')]);
  updates.registerApply(jobs.runner);
  const settings = createSettingsModule(ctx.infra, { updates: () => Promise.resolve(updates), jobs: () => Promise.resolve(jobs.runner) });
  return { service: settings.service, checkUpdate: settings.checkUpdate, runner: jobs.runner, updateJob: UPDATE_JOB };
}

export default defineModule({
  name: 'settings',
  doc: 'docs/updates.md',
  http: true,
  /**
   * As the service builds it: an update job may be queued here but never runs
   * in this process (it restarts it): a queued one found at start is failed at once.
   */
  build: async (ctx) => {
    const [{ createSettingsModule }, { UPDATE_JOB }, jobs] = await Promise.all([import('./index.js'), import('../updates/index.js'), ctx.get('jobs')]);
    jobs.runner.register(UPDATE_JOB, () => Promise.reject(new Error('an update job runs in mailsvc-update@<job>.service or the CLI, never in the service it restarts')));
    return createSettingsModule(ctx.infra, { updates: () => ctx.get('updates'), jobs: () => Promise.resolve(jobs.runner) });
  },
  commands: (program, cli) => settingsCommands(program, cli.runWith(settingsCli), () => progressView()),
});
