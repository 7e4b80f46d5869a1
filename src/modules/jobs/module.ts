import { progressView } from '../../shared/terminal/progress.js';
import { defineModule } from '../module-types.js';
import { jobCommands } from './commands.js';
import type { JobsModule } from './index.js';

declare module '../module-types.js' {
  interface ModuleRegistry {
    jobs: JobsModule;
  }
}

export default defineModule({
  name: 'jobs',
  doc: 'docs/jobs.md',
  http: true,
  build: async (ctx) => (await import('./index.js')).createJobsModule(ctx.infra),
  commands: (program, cli) => jobCommands(program, (fn) => cli.run()((j) => fn(j.runner)), () => progressView()),
  // The jobs of this process stop before the infrastructure closes.
  close: (jobs) => jobs.runner.stop(),
});
