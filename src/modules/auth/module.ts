import { defineModule } from '../module-types.js';
import type { ModuleContext } from '../module-types.js';
import { adminCommands } from './commands.js';
import type { AdminDeps } from './commands.js';
import type { AuthModule } from './index.js';

declare module '../module-types.js' {
  interface ModuleRegistry {
    auth: AuthModule;
  }
}

/** What `admin mfa reset` and `admin set-password` need of the database. */
async function admin(ctx: ModuleContext): Promise<AdminDeps> {
  const [mfa, auth] = await Promise.all([ctx.get('mfa'), ctx.get('auth')]);
  return { mfa: mfa.service, tokens: auth.tokens, notifyChanges: () => ctx.infra.changes.notify() };
}

export default defineModule({
  name: 'auth',
  doc: 'docs/auth.md',
  http: true,
  migrations: { '0029_token_generation': () => import('./migrations/0029_token_generation.js') },
  audits: [{ action: 'mfa.passkey_clone_suspected', when: 'a passkey answered with a signature counter at or below the stored one (a possible copy of the key): the sign-in was refused' }],
  build: async (ctx) => {
    const [{ createAuthModule }, mfa, sms, apiKeys] = await Promise.all([import('./index.js'), ctx.get('mfa'), ctx.get('sms'), ctx.get('api-keys')]);
    const limits = (await ctx.get('limits')).service;
    // Read on every attempt: a changed api-auth-* limit holds from the next attempt, without a restart.
    const lockoutLimits = () => ({
      failLimit: limits.value('api-auth-fail-limit'),
      windowSeconds: limits.value('api-auth-fail-window'),
      blockSeconds: limits.value('api-auth-block-seconds'),
    });
    return createAuthModule(ctx.infra, {
      mfa: mfa.service,
      passkeys: mfa.passkeys,
      // A counter that went backwards: the audit log keeps it (the assertion is refused).
      onPasskeyClone: async ({ ip, passkeyId, name, stored, presented }) =>
        (await ctx.get('audit')).service.record({
          actor: ctx.infra.settings.adminUsername,
          tokenId: null,
          source: ip,
          action: 'mfa.passkey_clone_suspected',
          target: passkeyId,
          summary: { name, stored_counter: stored, presented_counter: presented },
          result: 'refused',
        }),
      sms: sms.sender,
      apiKeys: apiKeys.service,
      lockoutLimits,
    });
  },
  commands: (program, cli) =>
    adminCommands(program, cli.runWith(async (ctx) => ctx.infra.settings, { database: false }), cli.runWith(admin, { redis: true }), cli.runIfMigrated(admin, { redis: true })),
  // Every token revoked when the administrator's password changed since the last start.
  prepare: (auth) => auth.prepare(),
  reload: async (auth) => auth.tokens.dropCache(),
});
