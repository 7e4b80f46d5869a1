import { progressView } from '../../shared/terminal/progress.js';
import { defineModule } from '../module-types.js';
import { backupCommands } from './commands.js';
import type { BackupsModule } from './index.js';

declare module '../module-types.js' {
  interface ModuleRegistry {
    backups: BackupsModule;
  }
}

export default defineModule({
  name: 'backups',
  doc: 'docs/backups.md',
  http: true,
  build: async (ctx) => {
    const [{ createBackupsModule }, jobs] = await Promise.all([import('./index.js'), ctx.get('jobs')]);
    // The limits are read when used: a restore on a fresh host has no limits table yet.
    const retention = {
      get: async () => (await ctx.get('limits')).service.value('backup-retention-days'),
      set: async (days: number) => void (await (await ctx.get('limits')).service.update({ 'backup-retention-days': days })),
    };
    return createBackupsModule(ctx.infra, { retention, runner: jobs.runner });
  },
  // restore, fetch and units run on a fresh host too: no schema check (the restore migrates what it restored).
  commands: (program, cli) =>
    backupCommands(
      program,
      cli.run({ redis: true }),
      cli.run({ schema: false }),
      () => progressView(),
      cli.runWith(async (ctx) => (await import('./index.js')).createRestoreService(ctx.infra), { schema: false }),
    ),
});
