import type { FastifyInstance } from 'fastify';
import type { Infra } from '../../infra/index.js';
import type { MfaService, PasskeyService, RegistrationCeremonies } from '../mfa/index.js';
import type { SmsSender } from '../sms/index.js';
import type { ApiKeyVerifier } from '../api-keys/index.js';
import { SmsSendLimits } from './sms-send-limits.js';
import type { RouteKit } from '../route-types.js';
import { AdminCredentials } from './admin-credentials.js';
import { AdminFingerprint } from './admin-fingerprint.js';
import { AdminGuard } from './admin-guard.js';
import { FreshAuthentication } from './fresh-auth.js';
import { AuthService } from './auth.service.js';
import type { PasskeyCloneEvent } from './auth.service.js';
import { MemoryChallengeStore, RedisChallengeStore } from './challenge-store.js';
import type { ChallengeStore } from './challenge-store.js';
import { randomId } from '../../shared/crypto.js';
import { Lockout } from './lockout.js';
import type { LockoutLimits } from './lockout.js';
import { TokenRepository } from './token.repository.js';
import { DatabaseRevocations, RedisRevocations } from './token-revocations.js';
import { TokenService } from './token.service.js';

export { adminCommands } from './commands.js';
export { hashPassword } from './admin-credentials.js';
export type { AdminGuard, AdminPrincipal, AdminRequest } from './admin-guard.js';
export type { AuthService, Channel, PasskeyCloneEvent } from './auth.service.js';
export type { TokenService } from './token.service.js';
export type { LockoutLimits } from './lockout.js';
/** The lockout, for another sign-in (the user portal) to count its own failures with it. */
export { Lockout } from './lockout.js';
export type { Attempt } from './lockout.js';
export { MemoryLockoutStore, RedisLockoutStore } from './lockout-store.js';
/** The sign-in bodies, which the web panel's sign-in takes as they are. */
export { LoginBody, PasskeyVerifyBody, SmsSendBody, VerifyBody } from './schema.js';

/** Sign-in, tokens, the lockout and the guard of every Admin endpoint. */
export function createAuthModule(
  infra: Pick<Infra, 'db' | 'dialect' | 'redis' | 'box' | 'clock' | 'settings' | 'authLog' | 'log' | 'changes'>,
  deps: { mfa: MfaService; passkeys: PasskeyService; onPasskeyClone: (event: PasskeyCloneEvent) => Promise<unknown>; sms: SmsSender; apiKeys: ApiKeyVerifier; lockoutLimits?: () => LockoutLimits },
) {
  const { settings, redis, clock } = infra;
  const credentials = new AdminCredentials(settings.adminUsername, settings.adminPasswordHash, settings.adminPassword);
  const fixed: LockoutLimits = { failLimit: settings.apiAuthFailLimit, windowSeconds: settings.apiAuthFailWindow, blockSeconds: settings.apiAuthBlockSeconds };
  const limitsOf = deps.lockoutLimits ?? (() => fixed);
  // Each read asks the provider, so a limit changed at run time holds from the next attempt on.
  const live: LockoutLimits = {
    get failLimit() { return limitsOf().failLimit; },
    get windowSeconds() { return limitsOf().windowSeconds; },
    get blockSeconds() { return limitsOf().blockSeconds; },
  };
  const lockout = new Lockout(live, redis);
  const tokenRepo = new TokenRepository(infra.db);
  const tokens = new TokenService(
    tokenRepo,
    clock,
    settings.accessTokenTtl,
    redis ? new RedisRevocations(redis, settings.accessTokenTtl * 1000) : new DatabaseRevocations(tokenRepo),
  );
  const challenges: ChallengeStore = redis ? new RedisChallengeStore(redis, clock) : new MemoryChallengeStore(clock);
  const auth = new AuthService({
    credentials,
    lockout,
    challenges,
    tokens,
    mfa: deps.mfa,
    passkeys: deps.passkeys,
    onPasskeyClone: deps.onPasskeyClone,
    sms: deps.sms,
    authLog: infra.authLog,
    clock,
    policy: { mfaRequired: settings.mfaRequired, allowBasicWithoutToken: settings.mfaAllowBasicWithoutToken, challengeTtlSeconds: settings.mfaChallengeTtl },
    codeKey: infra.box.derive('sms-code'),
    smsLimits: new SmsSendLimits({ perIpHour: settings.smsSendsPerIpHour, perPhoneHour: settings.smsSendsPerPhoneHour }, redis),
  });
  const fresh = new FreshAuthentication({ credentials, lockout, mfa: deps.mfa, authLog: infra.authLog, clock, windowSeconds: settings.reauthWindow });
  const guard = new AdminGuard({ tokens, credentials, lockout, mfa: deps.mfa, authLog: infra.authLog, apiKeys: deps.apiKeys, passwordAloneAllowed: auth.passwordAloneAllowed, fresh });
  /**
   * At the service's start: a password (hash) other than the one the service
   * last started with revokes every token, here, in Redis for the other
   * instances, and through the change signal for those on this host.
   */
  const prepare = async (): Promise<void> => {
    const identity = { username: settings.adminUsername, passwordHash: settings.adminPasswordHash, plainPassword: settings.adminPassword };
    const { changed, first } = await new AdminFingerprint(infra).record(identity, clock.now());
    if (!changed) return;
    // The first start on this database with nothing to revoke leaves no revocation mark behind.
    if (first && !(await tokens.anyLive())) return;
    const revoked = await tokens.revokeAll();
    infra.changes.notify();
    const why = first ? 'no record of the administrator password the tokens were issued under' : 'administrator password changed since the last start';
    infra.log.warn({ revoked_tokens: revoked }, `${why}: every access token is revoked`);
  };
  /** Passkey registrations wait in the challenge store too (Redis when configured): one answer, a short life, bound to the caller. */
  const registrations: RegistrationCeremonies = {
    async start(owner, challenge, ttlSeconds) {
      const id = randomId(24);
      const expiresAt = clock.now() + ttlSeconds * 1000;
      await challenges.create({ id, kind: 'registration', subject: owner, methods: ['webauthn'], expiresAt, failures: 0, smsSends: 0, smsCodeHash: null, webauthn: { challenge, expiresAt } });
      return id;
    },
    async take(id, owner) {
      const c = await challenges.get(id);
      if (!c || c.kind !== 'registration' || c.subject !== owner) return null;
      const value = await challenges.takeWebauthn(id);
      await challenges.consume(id);
      return value;
    },
  };
  return {
    auth,
    guard,
    registrations,
    tokens,
    prepare,
    lockout,
    mfa: deps.mfa,
    routes: async (app: FastifyInstance, kit: RouteKit) => (await import('./routes.js')).authRoutes(app, auth, kit.errors),
  };
}
export type AuthModule = ReturnType<typeof createAuthModule>;
