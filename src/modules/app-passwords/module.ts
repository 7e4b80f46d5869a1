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
    return createAppPasswordsModule(ctx.infra, { accounts: accounts.lookup });
  },
  commands: (program, cli) => appPasswordCommands(program, cli.run({ redis: true })),
  listens: {
    // A deleted account's app passwords go in the same transaction.
    'account.deleting': async (ctx) => {
      const { service } = await ctx.get('app-passwords');
      return { within: (tx, account) => service.removeForAccount(account.id, tx) };
    },
  },
  // The key app-password hashes are made with.
  prepare: (appPasswords) => appPasswords.prepare(),
});
