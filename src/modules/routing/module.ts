import { defineModule } from '../module-types.js';
import type { RoutingModule } from './index.js';

declare module '../module-types.js' {
  interface ModuleRegistry {
    routing: RoutingModule;
  }
}

export default defineModule({
  name: 'routing',
  doc: 'docs/mail.md',
  build: async (ctx) => (await import('./index.js')).createRoutingModule(ctx.infra),
});
