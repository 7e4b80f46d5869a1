import { defineModule } from '../module-types.js';
import { queueCommands } from './commands.js';
import type { QueueModule } from './index.js';

declare module '../module-types.js' {
  interface ModuleRegistry {
    queue: QueueModule;
  }
}

export default defineModule({
  name: 'queue',
  doc: 'docs/queue.md',
  http: true,
  build: async (ctx) => (await import('./index.js')).createQueueModule(ctx.infra),
  // The queue lives in Postfix, not in the database: no schema check (the audit record still needs one).
  commands: (program, cli) => queueCommands(program, cli.run({ database: false })),
});
