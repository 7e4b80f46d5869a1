import { defineModule } from '../module-types.js';
import { doctorCommands } from './commands.js';
import type { DoctorModule } from './index.js';

declare module '../module-types.js' {
  interface ModuleRegistry {
    doctor: DoctorModule;
  }
}

export default defineModule({
  name: 'doctor',
  doc: 'docs/doctor.md',
  http: true,
  /** Each source is built when its check runs, so a database that is away fails those checks, not the doctor. */
  build: async (ctx) => {
    const [{ createDoctorModule }, { probeDaemon }, { latestPerDomain }] = await Promise.all([import('./index.js'), import('../report/index.js'), import('../dns/index.js')]);
    const ms = ctx.infra.settings.stats.probeTimeoutMs;
    return createDoctorModule(ctx.infra, {
      sources: {
        components: async () => {
          const [found, nginx] = await Promise.all([(await ctx.get('report')).service.components(), probeDaemon({ name: 'nginx', pkg: 'nginx', unit: 'nginx' }, ms)]);
          return [...found, nginx];
        },
        limits: async () => (await ctx.get('limits')).show(),
        lastBackup: async () => (await ctx.get('backups')).health.lastBackup(),
        activeDomains: async () => (await ctx.get('domains')).service.activeNames(),
        deliverability: async () => (await latestPerDomain(ctx.infra.db, { limit: 500, offset: 0 })).items,
        lastTlsDeploy: async () => (await (await ctx.get('tls')).service.health()).last_deploy,
      },
    });
  },
  // The doctor shows a database that is away or unmigrated, a missing helper socket …: it checks nothing first.
  commands: (program, cli) => doctorCommands(program, cli.run({ schema: false })),
});
