import type { Infra } from '../../infra/index.js';
import type { AccountLookup } from '../accounts/index.js';
import type { AppPasswordVerifier } from '../app-passwords/index.js';
import { startHookServer } from './hook-server.js';
import type { HookListen } from './hook-server.js';
import { MailAuthService } from './mail-auth.service.js';

export type { MailAuthRequest, MailAuthResult, MailAuthService } from './mail-auth.service.js';
export type { HookListen } from './hook-server.js';

/** The check behind Dovecot's passdb, and the socket Dovecot's Lua passdb asks. */
export function createMailAuthModule(infra: Pick<Infra, 'log'>, deps: { accounts: Pick<AccountLookup, 'findForLogin'>; appPasswords: AppPasswordVerifier }) {
  const service = new MailAuthService(deps.accounts, deps.appPasswords, infra.log);
  return { service, startHookServer: (listen: HookListen) => startHookServer(listen, service, infra.log) };
}
export type MailAuthModule = ReturnType<typeof createMailAuthModule>;
