import type { FastifyInstance } from 'fastify';
import type { Infra } from '../../infra/index.js';
import type { MailSessionKicker } from '../../adapters/dovecot/doveadm.js';
import type { DomainLookup } from '../domains/index.js';
import type { RoutingGuard } from '../routing/index.js';
import type { RouteKit } from '../route-types.js';
import { AccountRepository } from './account.repository.js';
import type { AccountRow } from './account.repository.js';
import { AccountService } from './account.service.js';
import type { AccountDeleting, AccountPasswordChanged, SendLimitsListener } from './account.service.js';
import type { EventSource } from '../module-types.js';

export { accountCommands } from './commands.js';
export { verifyMailPassword } from './mail-password.js';
export type { AccountInput, AccountPatch, AccountView } from './schema.js';
export type { AccountDeleting, AccountPasswordChanged, AccountService, PasswordOptions, SendLimitsListener } from './account.service.js';
export type { AccountRow } from './account.repository.js';

/** An account for the mail login path, with whether its domain is active. */
export type LoginAccount = AccountRow & { domain_active: number };

/** What other modules may ask of the accounts. */
export type AccountLookup = {
  resolve(idOrAddress: string | number): Promise<AccountRow>;
  findForLogin(address: string): Promise<LoginAccount | undefined>;
  listAll(): Promise<AccountRow[]>;
  /** Ends the account's open IMAP and POP sessions (a failure is logged, never thrown). */
  kick(address: string): Promise<void>;
};

export type AccountsDeps = {
  domains: DomainLookup;
  /** Serialises changes to the address space (a mailbox never shares its address with an alias). */
  routing: RoutingGuard;
  sendLimits: SendLimitsListener;
  kicker: MailSessionKicker;
  /** `account.deleting`, emitted to whoever listens (the app passwords go with the account). */
  deleting?: EventSource<AccountDeleting>;
  /** `account.password-changed`, emitted to whoever listens (portal sessions end; app passwords when asked). */
  passwordChanged?: EventSource<AccountPasswordChanged>;
};

export function createAccountsModule(infra: Pick<Infra, 'db' | 'clock' | 'log'>, deps: AccountsDeps) {
  const repo = new AccountRepository(infra.db);
  const service = new AccountService(repo, deps.domains, deps.routing, deps.kicker, deps.sendLimits, infra.clock, infra.log, deps.deleting, deps.passwordChanged);
  const lookup: AccountLookup = {
    resolve: (idOrAddress) => service.resolve(idOrAddress),
    findForLogin: (address) => repo.findForLogin(address),
    listAll: () => repo.listAll(),
    kick: (address) => service.kick(address),
  };
  return {
    service,
    lookup,
    domains: deps.domains,
    sendRateDefaults: () => deps.sendLimits.defaults,
    routes: async (app: FastifyInstance, kit: RouteKit) => (await import('./routes.js')).accountRoutes(app, service, kit.hooks, kit.errors),
  };
}
export type AccountsModule = ReturnType<typeof createAccountsModule>;
