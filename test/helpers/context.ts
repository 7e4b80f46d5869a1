import type { Logger } from 'pino';
import type { Redis } from 'ioredis';
import type { Settings } from '../../src/config/settings.js';
import type { Db, DialectName } from '../../src/db/database.js';
import { openService } from '../../src/app/service.js';
import type { Modules } from '../../src/app/modules.js';
import type { MailSessionKicker } from '../../src/adapters/dovecot/doveadm.js';
import type { MailboxHost } from '../../src/adapters/dovecot/mailbox-host.js';
import type { SendFn } from '../../src/modules/sms/index.js';
import type { ModuleName, ModuleRegistry } from '../../src/modules/module-types.js';
import type { Clock } from '../../src/shared/clock.js';

export type ContextOptions = { clock?: Clock; sendSms?: SendFn; migrate?: boolean; log?: Logger; kicker?: MailSessionKicker; mailboxHost?: MailboxHost };

/**
 * The service's modules as `mailsvc serve` opens them (migrated, Redis
 * connected), with the services the tests drive under short names.
 */
type Built<K extends ModuleName> = ModuleRegistry[K];

export type TestContext = {
  modules: Modules;
  settings: Settings;
  log: Logger;
  clock: Clock;
  db: Db;
  dialect: DialectName;
  redis: Redis | undefined;
  readonly box: Modules['infra']['box'];
  readonly changes: Modules['infra']['changes'];
  readonly tokens: Built<'auth'>['tokens'];
  readonly guard: Built<'auth'>['guard'];
  readonly auth: Built<'auth'>['auth'];
  readonly mfa: Built<'mfa'>['service'];
  readonly providers: Built<'sms'>['providers'];
  readonly health: Built<'health'>['service'];
  readonly domains: Built<'domains'>['service'];
  readonly accounts: Built<'accounts'>['service'];
  readonly aliases: Built<'aliases'>['service'];
  readonly appPasswords: Built<'app-passwords'>['service'];
  readonly mailAuth: Built<'mail-auth'>['service'];
  readonly sendLimits: Built<'send-limits'>['service'];
  readonly sendCounter: Built<'send-limits'>['counter'];
  dropCaches(): void;
  close(): Promise<void>;
};

export async function createContext(settings: Settings, opts: ContextOptions = {}): Promise<TestContext> {
  const modules = await openService(settings, opts);
  const { infra } = modules;
  // Every module built up front, so that the tests reach each service without awaiting.
  const [auth, mfa, sms, health, domains, accounts, aliases, appPasswords, mailAuth, sendLimits] = await Promise.all([
    modules.get('auth'), modules.get('mfa'), modules.get('sms'), modules.get('health'), modules.get('domains'), modules.get('accounts'),
    modules.get('aliases'), modules.get('app-passwords'), modules.get('mail-auth'), modules.get('send-limits'),
  ]);
  const m = { auth, mfa, sms, health, domains, accounts, aliases, appPasswords, mailAuth, sendLimits };
  return {
    modules,
    settings,
    log: infra.log,
    clock: infra.clock,
    db: infra.db,
    dialect: infra.dialect,
    redis: infra.redis,
    get box() { return infra.box; },
    get changes() { return infra.changes; },
    get tokens() { return m.auth.tokens; },
    get guard() { return m.auth.guard; },
    get auth() { return m.auth.auth; },
    get mfa() { return m.mfa.service; },
    get providers() { return m.sms.providers; },
    get health() { return m.health.service; },
    get domains() { return m.domains.service; },
    get accounts() { return m.accounts.service; },
    get aliases() { return m.aliases.service; },
    get appPasswords() { return m.appPasswords.service; },
    get mailAuth() { return m.mailAuth.service; },
    get sendLimits() { return m.sendLimits.service; },
    get sendCounter() { return m.sendLimits.counter; },
    dropCaches: () => void modules.dropCaches(),
    close: () => modules.close(),
  };
}
