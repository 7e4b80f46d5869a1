import { defineModule } from '../module-types.js';
import { appPasswordCommands } from './commands.js';
import type { AppPasswordsModule } from './index.js';

declare module '../module-types.js' {
  interface ModuleRegistry {
    'app-passwords': AppPasswordsModule;
  }
}

export default defineModule({
  name: 'app-passwords',
  doc: 'docs/mail.md',
  http: true,
  build: async (ctx) => {
    const [{ createAppPasswordsModule }, accounts] = await Promise.all([import('./index.js'), ctx.get('accounts')]);
    // Settings, not limit keys: the limit keys are the contract's closed list (docs/limits.md).
    const { appPasswordsPerMailbox: perMailbox, appPasswordCreationsPerHour: perHour } = ctx.infra.settings;
    return createAppPasswordsModule(ctx.infra, { accounts: accounts.lookup, limits: () => ({ perMailbox, perHour }) });
  },
  commands: (program, cli) => appPasswordCommands(program, cli.run({ redis: true })),
  listens: {
    // A deleted account's app passwords go in the same transaction.
    'account.deleting': async (ctx) => {
      const { service } = await ctx.get('app-passwords');
      return { within: (tx, account) => service.removeForAccount(account.id, tx) };
    },
    // A password reset that asks for it revokes every app password in the same transaction.
    'account.password-changed': async (ctx) => {
      const { service } = await ctx.get('app-passwords');
      return { within: async (tx, account) => (account.revokeAppPasswords ? service.revokeAllForAccount(account.id, tx) : undefined) };
    },
  },
  // The key app-password hashes are made with.
  prepare: (appPasswords) => appPasswords.prepare(),
});
