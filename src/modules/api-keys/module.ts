import { defineModule } from '../module-types.js';
import { apiKeyCommands } from './commands.js';
import type { ApiKeysModule } from './index.js';

declare module '../module-types.js' {
  interface ModuleRegistry {
    'api-keys': ApiKeysModule;
  }
}

export default defineModule({
  name: 'api-keys',
  doc: 'docs/auth.md',
  http: true,
  build: async (ctx) => (await import('./index.js')).createApiKeysModule(ctx.infra),
  commands: (program, cli) => apiKeyCommands(program, cli.run()),
});
