import { defineModule } from '../module-types.js';
import type { AutoconfigModule } from './index.js';

declare module '../module-types.js' {
  interface ModuleRegistry {
    autoconfig: AutoconfigModule;
  }
}

export default defineModule({
  name: 'autoconfig',
  doc: 'docs/mail-clients.md',
  http: true,
  build: async (ctx) => {
    const [{ createAutoconfigModule }, domains, accounts, appPasswords] = await Promise.all([import('./index.js'), ctx.get('domains'), ctx.get('accounts'), ctx.get('app-passwords')]);
    return createAutoconfigModule(ctx.infra, { domains: domains.service, accounts: accounts.lookup, appPasswords: appPasswords.service });
  },
  // The daemons' configuration files may have changed: read them again.
  reload: async (autoconfig) => autoconfig.service.forget(),
});
