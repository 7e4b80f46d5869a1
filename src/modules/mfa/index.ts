import type { FastifyInstance } from 'fastify';
import type { CountryCode } from 'libphonenumber-js';
import type { Infra } from '../../infra/index.js';
import type { ProviderCredentials } from '../sms/index.js';
import type { RouteKit } from '../route-types.js';
import { MfaRepository } from './mfa.repository.js';
import { MfaService } from './mfa.service.js';
import { RecoveryCodeRepository } from './recovery-code.repository.js';
import { RecoveryCodeService } from './recovery-code.service.js';
import { PasskeyRepository } from './passkey.repository.js';
import { PasskeyService } from './passkey.service.js';

export { FactorName, MethodName, METHODS } from './schema.js';
export type { Factor, Method } from './schema.js';
export type { MfaService, MfaStatus, TotpEnrollment } from './mfa.service.js';
export type { AssertionResult, PasskeyService, RegistrationCeremonies } from './passkey.service.js';
import type { RegistrationCeremonies } from './passkey.service.js';
export { AuthenticationCredential } from './passkey.schema.js';


export type MfaDeps = {
  providers: ProviderCredentials;
  /** A second factor was just enrolled: revoke the tokens issued without one (they belong to auth). */
  onFactorEnrolled: () => Promise<unknown>;
  /** A recovery code was used to sign in (recorded in the audit log). */
  onRecoveryCodeUsed?: (event: { ip: string; remaining: number }) => Promise<unknown>;
  /** Where registration challenges are kept (reached when a registration starts). */
  ceremonies: () => Promise<RegistrationCeremonies>;
};

export function createMfaModule(infra: Pick<Infra, 'db' | 'redis' | 'box' | 'clock' | 'settings' | 'log'>, deps: MfaDeps) {
  const { settings } = infra;
  // Without Redis every instance is alone: the record is cached in the process (host commands signal changes).
  const alone = infra.redis === undefined;
  const repo = new MfaRepository(infra.db, alone);
  const passkeys = new PasskeyService(new PasskeyRepository(infra.db, alone), repo, infra.clock, settings.webauthn, settings.adminUsername);
  const recovery = new RecoveryCodeService(new RecoveryCodeRepository(infra.db), infra.box.derive('recovery-code'), infra.clock, infra.log, alone, deps.onRecoveryCodeUsed);
  const service = new MfaService(repo, deps.providers, infra.box, infra.clock, {
    issuer: settings.mfaIssuer,
    mfaRequired: settings.mfaRequired,
    smsDefaultRegion: settings.smsDefaultRegion as CountryCode | undefined,
    recovery,
    passkeys,
    onFactorEnrolled: deps.onFactorEnrolled,
  });
  return {
    service,
    passkeys,
    dropCache: () => {
      repo.dropCache();
      recovery.dropCache();
      passkeys.dropCache();
    },
    routes: async (app: FastifyInstance, kit: RouteKit) => {
      (await import('./routes.js')).mfaRoutes(app, service, kit.hooks, kit.errors);
      (await import('./passkey.routes.js')).passkeyRoutes(app, { passkeys, ceremonies: deps.ceremonies, onFactorEnrolled: deps.onFactorEnrolled }, kit);
    },
  };
}
export type MfaModule = ReturnType<typeof createMfaModule>;
