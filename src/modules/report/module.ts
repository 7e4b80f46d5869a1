import { defineModule } from '../module-types.js';
import { reportCommands } from './commands.js';
import type { ReportModule } from './index.js';

declare module '../module-types.js' {
  interface ModuleRegistry {
    report: ReportModule;
  }
}

export default defineModule({
  name: 'report',
  doc: 'docs/stats.md',
  build: async (ctx) => {
    const [{ createReportModule }, queue] = await Promise.all([import('./index.js'), ctx.get('queue')]);
    return createReportModule(ctx.infra, {
      queue: queue.service,
      // nftables.service matters only while mailsvc's firewall is on (read when nftables is found not running).
      firewallEnabled: async () => (await (await ctx.get('firewall')).service.get())['firewall-enabled'] === 'yes',
    });
  },
  // The report shows a database or Redis that is away or unmigrated: it checks neither first.
  commands: (program, cli) => reportCommands(program, cli.run({ schema: false })),
});
