import { defineModule } from '../module-types.js';
import { domainCommands } from './commands.js';
import type { DomainDeleting, DomainsModule } from './index.js';

declare module '../module-types.js' {
  interface ModuleRegistry {
    domains: DomainsModule;
  }
  interface ModuleEvents {
    /** A domain is being deleted (it has no accounts or aliases left). */
    'domain.deleting': DomainDeleting;
  }
}

export default defineModule({
  name: 'domains',
  doc: 'docs/mail.md',
  http: true,
  build: async (ctx) =>
    (await import('./index.js')).createDomainsModule(ctx.infra, {
      // The dns module is built on the domains: reached when keys are asked for, not now.
      keys: { generate: async (d) => (await ctx.get('dns')).dkim.generate(d) },
      deleting: ctx.event('domain.deleting'),
    }),
  commands: (program, cli) => domainCommands(program, cli.run()),
});
