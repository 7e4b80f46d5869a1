import { defineModule } from '../module-types.js';
import type { HealthModule } from './index.js';

declare module '../module-types.js' {
  interface ModuleRegistry {
    health: HealthModule;
  }
}

export default defineModule({
  name: 'health',
  doc: 'docs/stats.md',
  http: true,
  build: async (ctx) => {
    const [{ createHealthModule }, report] = await Promise.all([import('./index.js'), ctx.get('report')]);
    return createHealthModule(ctx.infra, {
      components: report.service,
      backups: async () => (await ctx.get('backups')).health.lastBackup(),
      tls: async () => (await ctx.get('tls')).service.health(),
      timeoutMs: ctx.infra.settings.stats.probeTimeoutMs,
      certificates: async () => (await ctx.get('certs')).service.expiring(),
    });
  },
});
