import type { MailSessionKicker } from '../../adapters/dovecot/doveadm.js';
import { defineModule } from '../module-types.js';
import { accountCommands } from './commands.js';
import type { AccountDeleting, AccountPasswordChanged, AccountsModule } from './index.js';

declare module '../module-types.js' {
  interface ModuleRegistry {
    accounts: AccountsModule;
  }
  interface ModuleEvents {
    /** An account is being deleted. */
    'account.deleting': AccountDeleting;
    /** An account's password was set: what the old one opened ends. */
    'account.password-changed': AccountPasswordChanged;
  }
  interface ModuleOptions {
    /** Ends mail sessions instead of doveadm (tests). */
    kicker?: MailSessionKicker | undefined;
  }
}

export default defineModule({
  name: 'accounts',
  doc: 'docs/mail.md',
  http: true,
  build: async (ctx) => {
    const [{ createAccountsModule }, { DoveadmKicker }, domains, sendLimits, routing] = await Promise.all([
      import('./index.js'),
      import('../../adapters/dovecot/doveadm.js'),
      ctx.get('domains'),
      ctx.get('send-limits'),
      ctx.get('routing'),
    ]);
    return createAccountsModule(ctx.infra, {
      domains: domains.service,
      routing: routing.guard,
      sendLimits: sendLimits.service,
      kicker: ctx.options.kicker ?? new DoveadmKicker(ctx.infra.helper),
      deleting: ctx.event('account.deleting'),
      passwordChanged: ctx.event('account.password-changed'),
    });
  },
  commands: (program, cli) => accountCommands(program, cli.run({ redis: true })),
});
