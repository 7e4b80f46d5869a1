import { defineModule } from '../module-types.js';
import { domainCommands } from './commands.js';
import type { DomainsModule } from './index.js';

declare module '../module-types.js' {
  interface ModuleRegistry {
    domains: DomainsModule;
  }
}

export default defineModule({
  name: 'domains',
  doc: 'docs/mail.md',
  http: true,
  build: async (ctx) =>
    // The dns module is built on the domains: reached when keys are asked for, not now.
    (await import('./index.js')).createDomainsModule(ctx.infra, {
      keys: {
        generate: async (d) => (await ctx.get('dns')).dkim.generate(d),
        stopSigning: async (d) => (await ctx.get('dns')).dkim.stopSigning(d),
        forget: async (tx, d) => (await ctx.get('dns')).dkim.forgetDomain(tx, d),
        restoreSigning: async () => void (await (await ctx.get('dns')).dkim.syncSigning()),
      },
    }),
  commands: (program, cli) => domainCommands(program, cli.run()),
});
