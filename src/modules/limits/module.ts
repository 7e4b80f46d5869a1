import { defineModule } from '../module-types.js';
import { limitCommands } from './commands.js';
import type { LimitsModule } from './index.js';

declare module '../module-types.js' {
  interface ModuleRegistry {
    limits: LimitsModule;
  }
}

export default defineModule({
  name: 'limits',
  doc: 'docs/limits.md',
  http: true,
  build: async (ctx) => {
    const limits = (await import('./index.js')).createLimitsModule(ctx.infra, {
      onChanged: async (keys) => {
        // Other processes (API instances, a running service after a CLI change) read the limits again.
        ctx.infra.changes.notify();
        // The per-account entries of the send-limit map hold the defaults resolved: push them again.
        if (keys.some((k) => k.startsWith('send-rate-'))) await (await ctx.get('send-limits')).service.syncAll();
      },
      // A value an older version stored and this one refuses (dkim-key-bits 1024): a warning in the journal (the CLI: on stderr).
      onIgnored: (message, r) => ctx.infra.log.warn({ limit: r.key, stored: r.stored, in_force: r.in_force }, message),
    });
    // The values in force are read once here; a change signal reads them again (reload).
    await limits.service.refresh();
    return limits;
  },
  commands: (program, cli) => limitCommands(program, cli.run({ redis: true })),
  reload: (limits) => limits.service.refresh(),
});
