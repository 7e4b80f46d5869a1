import { defineModule } from '../module-types.js';
import { installCommands } from './commands.js';
import type { InstallModule } from './index.js';

declare module '../module-types.js' {
  interface ModuleRegistry {
    install: InstallModule;
  }
}

export default defineModule({
  name: 'install',
  doc: 'docs/install.md',
  build: async (ctx) => (await import('./index.js')).createInstallModule(ctx.infra),
  // install makes the database (it migrates): no schema check; the audit record is written when there is one.
  commands: (program, cli) => installCommands(program, cli.run({ schema: false })),
});
