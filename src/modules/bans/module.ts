import { defineModule } from '../module-types.js';
import { banCommands } from './commands.js';
import type { BansModule } from './index.js';

declare module '../module-types.js' {
  interface ModuleRegistry {
    bans: BansModule;
  }
}

export default defineModule({
  name: 'bans',
  doc: 'docs/bans.md',
  http: true,
  build: async (ctx) => (await import('./index.js')).createBansModule(ctx.infra),
  commands: (program, cli) => banCommands(program, cli.run()),
});
