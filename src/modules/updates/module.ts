import { defineModule } from '../module-types.js';
import type { UpdatesModule } from './index.js';

declare module '../module-types.js' {
  interface ModuleRegistry {
    updates: UpdatesModule;
  }
}

export default defineModule({
  name: 'updates',
  doc: 'docs/updates.md',
  build: async (ctx) => {
    const [{ createUpdatesModule }, apiKeys] = await Promise.all([import('./index.js'), ctx.get('api-keys')]);
    return createUpdatesModule(ctx.infra, {
      channel: async () => (await import('../settings/index.js')).createSettingsStore(ctx.infra).channel(),
      // A read-only key for the updater's health check, alive an hour at most, revoked when the update ends.
      probeKeys: {
        create: async () => {
          const expires = new Date(ctx.infra.clock.now() + 3600_000).toISOString();
          const k = await apiKeys.service.create({ name: 'mailsvc update health check', scopes: ['read'], expires_at: expires }, 'mailsvc-update');
          return { id: k.id, key: k.key };
        },
        revoke: (id) => apiKeys.service.revoke(id),
      },
    });
  },
});
