import type { FastifyInstance } from 'fastify';
import type { Infra } from '../../infra/index.js';
import type { MailboxHost } from '../../adapters/dovecot/mailbox-host.js';
import type { AccountLookup, AccountService } from '../accounts/index.js';
import type { AppPasswordService } from '../app-passwords/index.js';
import type { AuditService } from '../audit/index.js';
import { Lockout, MemoryLockoutStore, RedisLockoutStore } from '../auth/index.js';
import type { LockoutLimits } from '../auth/index.js';
import type { DomainLookup } from '../domains/index.js';
import type { RouteKit } from '../route-types.js';
import { PortalAccessService } from './access.service.js';
import { PortalRepository } from './portal.repository.js';
import { PortalSessions } from './portal-session.js';
import { SESSION_WRONG_ANSWERS } from './portal-lockouts.js';
import { PortalTotp } from './portal-totp.js';
import { PortalService } from './portal.service.js';
import type { DeviceProfileRenderer } from './portal.service.js';

export { portalCommands } from './commands.js';
export type { DeviceProfileRenderer, PortalService } from './portal.service.js';
export type { PortalAccessService } from './access.service.js';
export { PORTAL_COOKIE, CSRF_HEADER } from './portal-session.js';

export type PortalModuleDeps = {
  accounts: AccountLookup;
  passwords: Pick<AccountService, 'setPassword'>;
  appPasswords: Pick<AppPasswordService, 'create' | 'list' | 'revoke'>;
  audit: Pick<AuditService, 'record'>;
  domains: DomainLookup;
  mailbox: MailboxHost;
  profiles?: DeviceProfileRenderer | undefined;
};

/**
 * The mailbox self-service portal (served when MAILSVC_ENABLE_USER_PORTAL=yes)
 * and the administrator's switch of it per domain and mailbox (always).
 */
export function createPortalModule(infra: Pick<Infra, 'db' | 'box' | 'clock' | 'settings' | 'redis' | 'authLog' | 'log'>, deps: PortalModuleDeps) {
  const { settings } = infra;
  const repo = new PortalRepository(infra.db);
  const sessions = new PortalSessions(repo, infra.box.derive('portal-csrf'), infra.clock, { idleSeconds: settings.panelSessionIdle, maxSeconds: settings.panelSessionMax });
  // The admin API's numbers, counted apart (keys mailsvc:portalfail-*): a user's failures never lock the administrator out, nor the reverse.
  const limits: LockoutLimits = { failLimit: settings.apiAuthFailLimit, windowSeconds: settings.apiAuthFailWindow, blockSeconds: settings.apiAuthBlockSeconds };
  const lockout = (prefix: string, l: LockoutLimits = limits) => new Lockout(l, undefined, infra.redis ? new RedisLockoutStore(l, infra.redis, prefix) : new MemoryLockoutStore(l));
  // Wrong answers inside one session: counted for the session's whole life.
  const perSession: LockoutLimits = { failLimit: SESSION_WRONG_ANSWERS, windowSeconds: settings.panelSessionMax, blockSeconds: settings.panelSessionMax };
  const service = new PortalService({
    repo,
    sessions,
    totp: new PortalTotp(repo, infra.box, infra.clock, settings.mfaIssuer),
    accounts: deps.accounts,
    passwords: deps.passwords,
    appPasswords: deps.appPasswords,
    audit: deps.audit,
    mailbox: deps.mailbox,
    lockouts: { ip: lockout('portalfail-ip'), address: lockout('portalfail-addr'), session: lockout('portalfail-session', perSession) },
    authLog: infra.authLog,
    clock: infra.clock,
    log: infra.log,
    profiles: deps.profiles,
  });
  const access = new PortalAccessService(repo, deps.domains, deps.accounts, infra.clock);
  return {
    service,
    access,
    /** The account is being deleted: its portal rows go in the same transaction. */
    forgetAccount: async (tx: Parameters<PortalRepository['removeTotp']>[1], account: { id: number; address: string }) => {
      await repo.removeSessionsOf(account.id, undefined, tx);
      await repo.removeTotp(account.id, tx);
      await repo.removeRules(account.id, tx);
      await repo.setDisabled('mailbox', account.address, false, 0, tx);
    },
    forgetDomain: async (tx: Parameters<PortalRepository['removeTotp']>[1], name: string) => {
      await repo.setDisabled('domain', name, false, 0, tx);
    },
    routes: async (app: FastifyInstance, kit: RouteKit) => {
      (await import('./admin-routes.js')).portalAccessRoutes(app, access, kit.hooks, kit.errors);
      if (settings.enableUserPortal) (await import('./routes.js')).portalRoutes(app, { service, sessions, devHttp: settings.panelDevHttp }, kit.errors);
    },
  };
}
export type PortalModule = ReturnType<typeof createPortalModule>;
