import { defineModule } from '../module-types.js';
import type { MetricsModule } from './index.js';

declare module '../module-types.js' {
  interface ModuleRegistry {
    metrics: MetricsModule;
  }
}

export default defineModule({
  name: 'metrics',
  doc: 'docs/stats.md',
  // First in the module list: its hooks time every route registered after it.
  http: true,
  build: async (ctx) => {
    const [{ createMetricsModule }, queue] = await Promise.all([import('./index.js'), ctx.get('queue')]);
    return createMetricsModule(ctx.infra, { queue: queue.service });
  },
});
