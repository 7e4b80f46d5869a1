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
      keys: {
        generate: async (d) => (await ctx.get('dns')).dkim.generate(d),
        has: async (d) => (await (await ctx.get('dns')).dkim.keys(d)).length > 0,
        resync: async () => void (await (await ctx.get('dns')).dkim.syncSigning()),
      },
      deleting: ctx.event('domain.deleting'),
      // postsrsd's excluded domains follow the active domains at once (best effort; the dns module logs and audits a failure).
      ...(ctx.infra.settings.dns.enableSrs ? { activeChanged: async (change: { action: string; domain: string }) => (await ctx.get('dns')).srsFollow(change) } : {}),
    }),
  commands: (program, cli) => domainCommands(program, cli.run()),
});
