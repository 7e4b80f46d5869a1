import { progressView } from '../../shared/terminal/progress.js';
import { defineModule } from '../module-types.js';
import { dnsCommands } from './commands.js';
import type { DnsModule } from './index.js';

declare module '../module-types.js' {
  interface ModuleRegistry {
    dns: DnsModule;
  }
}

export default defineModule({
  name: 'dns',
  doc: 'docs/dns.md',
  migrations: { '0022_dns_dane': () => import('./migrations/0022_dns_dane.js') },
  http: true,
  audits: [{ action: 'srs.follow_failed', when: "a domain was added, deleted, switched on or off with MAILSVC_ENABLE_SRS=yes, and postsrsd's excluded domains could not follow at once (the domain change itself stands; the summary holds the change and why; the hourly timer tries again)" }],
  build: async (ctx) => {
    const [{ createDnsModule }, domains, limits, jobs] = await Promise.all([import('./index.js'), ctx.get('domains'), ctx.get('limits'), ctx.get('jobs')]);
    return createDnsModule(ctx.infra, {
      domains: domains.service,
      keyBits: () => limits.service.value('dkim-key-bits'),
      rotationDays: () => limits.service.value('dkim-rotation-days'),
      graceDays: () => limits.service.value('dkim-rotation-grace-days'),
      activeDomains: () => domains.service.activeNames(),
      jobs: jobs.runner,
      onSrsFollowFailed: async ({ action, domain, detail }) =>
        (await ctx.get('audit')).service.record({ actor: 'mailsvc', tokenId: null, source: 'mailsvc', action: 'srs.follow_failed', target: domain, summary: { change: action, error: detail }, result: 'failed' }),
    });
  },
  commands: (program, cli) => dnsCommands(program, cli.run(), () => progressView()),
  listens: {
    // A deleted domain's DKIM keys are retired with it (docs/dns.md).
    'domain.deleting': async (ctx) => (await import('./index.js')).retireDomainKeys((await ctx.get('dns')).dkim),
  },
});
