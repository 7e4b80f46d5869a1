import { defineModule } from '../module-types.js';
import type { MfaModule } from './index.js';

declare module '../module-types.js' {
  interface ModuleRegistry {
    mfa: MfaModule;
  }
}

export default defineModule({
  name: 'mfa',
  doc: 'docs/auth.md',
  http: true,
  migrations: { '0025_passkeys': () => import('./migrations/0025_passkeys.js') },
  audits: [{ action: 'mfa.recovery_code_used', when: 'a recovery code signed the administrator in (the summary holds how many are left)' }],
  build: async (ctx) =>
    (await import('./index.js')).createMfaModule(ctx.infra, {
      providers: (await ctx.get('sms')).providers,
      // Auth is built on MFA, so it is reached when a factor is enrolled, not now.
      onFactorEnrolled: async () => (await ctx.get('auth')).tokens.revokeUnverified(),
      ceremonies: async () => (await ctx.get('auth')).registrations,
      onRecoveryCodeUsed: async ({ ip, remaining }) =>
        (await ctx.get('audit')).service.record({
          actor: ctx.infra.settings.adminUsername,
          tokenId: null,
          source: ip,
          action: 'mfa.recovery_code_used',
          target: null,
          summary: { remaining },
          result: 'ok',
        }),
    }),
  reload: async (mfa) => mfa.dropCache(),
});
