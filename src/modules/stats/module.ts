import { progressView } from '../../shared/terminal/progress.js';
import { defineModule } from '../module-types.js';
import { statsCommands } from './commands.js';
import type { StatsModule } from './index.js';

declare module '../module-types.js' {
  interface ModuleRegistry {
    stats: StatsModule;
  }
}

export default defineModule({
  name: 'stats',
  doc: 'docs/stats.md',
  http: true,
  build: async (ctx) => {
    const [{ createStatsModule }, limits] = await Promise.all([import('./index.js'), ctx.get('limits')]);
    return createStatsModule(ctx.infra, { retentionDays: () => limits.service.value('stats-retention-days') });
  },
  commands: (program, cli) => statsCommands(program, cli.run(), () => progressView()),
});
