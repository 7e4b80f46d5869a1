import { WINDOWS, sendRateLimitKey } from '../../shared/send-rate.js';
import type { Limits } from '../../shared/send-rate.js';
import { defineModule } from '../module-types.js';
import { sendLimitCommands } from './commands.js';
import type { SendLimitsModule } from './index.js';

declare module '../module-types.js' {
  interface ModuleRegistry {
    'send-limits': SendLimitsModule;
  }
}

export default defineModule({
  name: 'send-limits',
  doc: 'docs/mail.md',
  http: true,
  build: async (ctx) => {
    const [{ createSendLimitsModule }, limits] = await Promise.all([import('./index.js'), ctx.get('limits')]);
    // The global defaults are the limits send-rate-*, read per call.
    const defaults = (): Limits => Object.fromEntries(WINDOWS.map((w) => [w, limits.service.value(sendRateLimitKey(w))])) as Limits;
    // The accounts notify the send limits: reached when listed, not now.
    return createSendLimitsModule(ctx.infra, { accounts: { listAll: async () => (await ctx.get('accounts')).lookup.listAll() }, defaults });
  },
  commands: (program, cli) => sendLimitCommands(program, cli.run({ redis: true })),
});
