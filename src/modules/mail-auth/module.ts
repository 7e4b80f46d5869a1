import { defineModule } from '../module-types.js';
import type { MailAuthModule } from './index.js';

declare module '../module-types.js' {
  interface ModuleRegistry {
    'mail-auth': MailAuthModule;
  }
}

export default defineModule({
  name: 'mail-auth',
  doc: 'docs/mail.md',
  build: async (ctx) => {
    const [{ createMailAuthModule }, appPasswords] = await Promise.all([import('./index.js'), ctx.get('app-passwords')]);
    return createMailAuthModule(ctx.infra, { appPasswords: appPasswords.service });
  },
});
