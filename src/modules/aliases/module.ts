import { defineModule } from '../module-types.js';
import { aliasCommands } from './commands.js';
import type { AliasesModule } from './index.js';

declare module '../module-types.js' {
  interface ModuleRegistry {
    aliases: AliasesModule;
  }
}

export default defineModule({
  name: 'aliases',
  doc: 'docs/mail.md',
  http: true,
  build: async (ctx) => {
    const [{ createAliasesModule }, domains, routing] = await Promise.all([import('./index.js'), ctx.get('domains'), ctx.get('routing')]);
    return createAliasesModule(ctx.infra, { domains: domains.service, routing: routing.guard });
  },
  commands: (program, cli) => aliasCommands(program, cli.run()),
});
