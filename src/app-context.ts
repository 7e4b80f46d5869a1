import { Redis } from 'ioredis';
import type { CountryCode } from 'libphonenumber-js';
import pino from 'pino';
import type { Logger } from 'pino';
import type { Settings } from './config/settings.js';
import { createDb, dialectOf } from './db/database.js';
import type { Db, DialectName } from './db/database.js';
import { migrateToLatest } from './db/migrate.js';
import { AuthLog } from './shared/auth-log.js';
import { AppError } from './shared/errors.js';
import { systemClock } from './shared/clock.js';
import type { Clock } from './shared/clock.js';
import { loadSecretBox } from './shared/secret-key-file.js';
import type { SecretBox } from './shared/secret-box.js';
import type { OutboundPolicy } from './adapters/outbound/address-policy.js';
import { AdminCredentials } from './modules/auth/admin-credentials.js';
import { AdminGuard } from './modules/auth/admin-guard.js';
import { AuthService } from './modules/auth/auth.service.js';
import { MemoryChallengeStore, RedisChallengeStore } from './modules/auth/challenge-store.js';
import { Lockout } from './modules/auth/lockout.js';
import { SmsSendLimits } from './modules/auth/sms-send-limits.js';
import { TokenRepository } from './modules/auth/token.repository.js';
import { TokenService } from './modules/auth/token.service.js';
import { LocalRevocations, RedisRevocations } from './modules/auth/token-revocations.js';
import { ChangeSignal } from './shared/change-signal.js';
import { MfaRepository } from './modules/mfa/mfa.repository.js';
import { MfaService } from './modules/mfa/mfa.service.js';
import { ApiKeyRepository } from './modules/api-keys/api-key.repository.js';
import { ApiKeyService } from './modules/api-keys/api-key.service.js';
import { RecoveryCodeRepository } from './modules/mfa/recovery-code.repository.js';
import { RecoveryCodeService } from './modules/mfa/recovery-code.service.js';
import { ProviderRepository } from './modules/sms/provider.repository.js';
import { ProviderService } from './modules/sms/provider.service.js';
import { SmsSender } from './modules/sms/sms.service.js';
import type { SendFn } from './modules/sms/sms.service.js';
import { HealthService } from './modules/health/health.service.js';
import { DomainRepository } from './modules/domains/domain.repository.js';
import { DomainService } from './modules/domains/domain.service.js';
import { AccountRepository } from './modules/accounts/account.repository.js';
import { AccountService } from './modules/accounts/account.service.js';
import { AliasService } from './modules/aliases/alias.service.js';
import { AppPasswordService } from './modules/app-passwords/app-password.service.js';
import { MailAuthService } from './modules/mail-auth/mail-auth.service.js';
import { SendLimitsService } from './modules/send-limits/send-limits.service.js';
import { FileLimitMap, RedisLimitMap } from './modules/send-limits/limit-map.js';
import { SendCounter } from './modules/send-limits/policy-counter.js';
import { DoveadmKicker } from './adapters/dovecot/doveadm.js';
import type { MailSessionKicker } from './adapters/dovecot/doveadm.js';
import { serviceKey } from './shared/service-keys.js';
import { join } from 'node:path';

export type AppContext = {
  settings: Settings;
  log: Logger;
  clock: Clock;
  db: Db;
  dialect: DialectName;
  redis: Redis | undefined;
  box: SecretBox;
  tokens: TokenService;
  mfa: MfaService;
  providers: ProviderService;
  auth: AuthService;
  guard: AdminGuard;
  apiKeys: ApiKeyService;
  health: HealthService;
  domains: DomainService;
  accounts: AccountService;
  aliases: AliasService;
  appPasswords: AppPasswordService;
  mailAuth: MailAuthService;
  sendLimits: SendLimitsService;
  sendCounter: SendCounter;
  /** Written by host commands that change what a running service caches. */
  changes: ChangeSignal;
  /** Drops the in-process caches (tokens, MFA record): another process changed them. */
  dropCaches(): void;
  close(): Promise<void>;
};

export type ContextOptions = { clock?: Clock; sendSms?: SendFn; migrate?: boolean; log?: Logger; kicker?: MailSessionKicker };

/** Builds every dependency by hand, in one place (the composition root). */
export async function createContext(settings: Settings, opts: ContextOptions = {}): Promise<AppContext> {
  const clock = opts.clock ?? systemClock;
  const log = opts.log ?? pino({ level: settings.logLevel, redact: ['req.headers.authorization', 'req.headers.cookie'] });
  const dialect = dialectOf(settings.databaseUrl);
  const db = createDb(settings.databaseUrl);
  let redis: Redis | undefined;
  try {
    if (opts.migrate !== false) await migrateToLatest(db);
    redis = settings.redisUrl
      ? new Redis(settings.redisUrl, { lazyConnect: true, maxRetriesPerRequest: 2, enableOfflineQueue: true })
      : undefined;
    if (redis) {
      // Without a listener ioredis prints every connection error as an unhandled event.
      redis.on('error', (err: Error) => log.warn({ err: { message: err.message } }, 'redis connection error'));
      await redis.connect().catch((err: unknown) => {
        throw new AppError('unavailable', `cannot reach Redis at MAILSVC_REDIS_URL (${err instanceof Error ? err.message : String(err)}); check that it runs`);
      });
    }
  } catch (err) {
    redis?.disconnect();
    await db.destroy();
    throw err;
  }
  const box = loadSecretBox(settings);
  const outbound: OutboundPolicy = { allowHosts: settings.outboundAllowHosts };
  const authLog = new AuthLog(settings.authLog);
  const credentials = await AdminCredentials.create(settings.adminUsername, settings.adminPasswordHash, settings.adminPassword);
  const lockout = new Lockout(
    { failLimit: settings.apiAuthFailLimit, windowSeconds: settings.apiAuthFailWindow, blockSeconds: settings.apiAuthBlockSeconds },
    redis,
  );
  const tokens = new TokenService(
    new TokenRepository(db),
    clock,
    settings.accessTokenTtl,
    redis ? new RedisRevocations(redis, settings.accessTokenTtl * 1000) : new LocalRevocations(),
  );
  const mfaRepo = new MfaRepository(db, redis === undefined);
  const changes = new ChangeSignal(settings.dataDir);
  const providers = new ProviderService(new ProviderRepository(db, dialect), box, clock, settings.smsProviders, outbound);
  const mfa = new MfaService(mfaRepo, providers, box, clock, {
    issuer: settings.mfaIssuer,
    mfaRequired: settings.mfaRequired,
    smsDefaultRegion: settings.smsDefaultRegion as CountryCode | undefined,
    recovery: new RecoveryCodeService(new RecoveryCodeRepository(db), box.derive('recovery-code'), clock, log),
    onFactorEnrolled: () => tokens.revokeUnverified(),
  });
  const policy = {
    mfaRequired: settings.mfaRequired,
    allowBasicWithoutToken: settings.mfaAllowBasicWithoutToken,
    challengeTtlSeconds: settings.mfaChallengeTtl,
  };
  const auth = new AuthService({
    credentials,
    lockout,
    challenges: redis ? new RedisChallengeStore(redis, clock) : new MemoryChallengeStore(clock),
    tokens,
    mfa,
    sms: new SmsSender(providers, outbound, opts.sendSms),
    smsLimits: new SmsSendLimits({ perIpHour: settings.smsSendsPerIpHour, perPhoneHour: settings.smsSendsPerPhoneHour }, redis),
    authLog,
    clock,
    policy,
    codeKey: box.derive('sms-code'),
  });
  const apiKeys = new ApiKeyService(new ApiKeyRepository(db), clock);
  const guard = new AdminGuard({ tokens, credentials, lockout, mfa, authLog, apiKeys, passwordAloneAllowed: auth.passwordAloneAllowed });
  const health = new HealthService(db, dialect, redis, clock);
  const domains = new DomainService(new DomainRepository(db), clock);
  const accountRepo = new AccountRepository(db);
  const sendLimits = new SendLimitsService(
    accountRepo,
    redis ? new RedisLimitMap(redis) : new FileLimitMap(join(settings.dataDir, 'send-limits.json')),
    settings.mail.sendRateDefaults,
  );
  const kicker = opts.kicker ?? new DoveadmKicker({ binary: settings.mail.doveadm, config: settings.mail.dovecotConfig });
  const accounts = new AccountService(accountRepo, domains, kicker, sendLimits, clock, log);
  const appPasswords = new AppPasswordService(db, accounts, await serviceKey(db, dialect, box, 'app-password-hash'), clock);
  return {
    settings,
    log,
    clock,
    db,
    dialect,
    redis,
    box,
    tokens,
    mfa,
    providers,
    auth,
    guard,
    apiKeys,
    health,
    domains,
    accounts,
    aliases: new AliasService(db, domains, clock),
    appPasswords,
    mailAuth: new MailAuthService(accountRepo, appPasswords, log),
    sendLimits,
    sendCounter: new SendCounter(redis),
    changes,
    dropCaches() {
      tokens.dropCache();
      mfaRepo.dropCache();
    },
    async close() {
      changes.close();
      if (redis) await redis.quit().catch(() => undefined);
      await db.destroy();
    },
  };
}
