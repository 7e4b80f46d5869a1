import { defineModule } from '../module-types.js';
import { auditCommands } from './commands.js';
import type { AuditModule } from './index.js';

declare module '../module-types.js' {
  interface ModuleRegistry {
    audit: AuditModule;
  }
}

export default defineModule({
  name: 'audit',
  doc: 'docs/audit.md',
  http: true,
  build: async (ctx) => (await import('./index.js')).createAuditModule(ctx.infra),
  commands: (program, cli) => auditCommands(program, (fn) => cli.run()((a) => fn(a.service))),
});
