import { defineModule } from '../module-types.js';
import type { SendFn, SmsModule } from './index.js';

declare module '../module-types.js' {
  interface ModuleRegistry {
    sms: SmsModule;
  }
  interface ModuleOptions {
    /** Sends the SMS instead of the provider's HTTP API (tests). */
    sendSms?: SendFn | undefined;
  }
}

export default defineModule({
  name: 'sms',
  doc: 'docs/auth.md',
  http: true,
  build: async (ctx) => (await import('./index.js')).createSmsModule(ctx.infra, { sendSms: ctx.options.sendSms }),
});
