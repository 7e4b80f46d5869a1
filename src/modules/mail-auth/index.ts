import type { Infra } from '../../infra/index.js';
import type { AppPasswordVerifier } from '../app-passwords/index.js';
import { startHookServer } from './hook-server.js';
import type { HookListen } from './hook-server.js';
import { MailAuthService } from './mail-auth.service.js';
import type { MailAuthRequest, MailAuthResult } from './mail-auth.service.js';

export type { MailAuthRequest, MailAuthResult, MailAuthService } from './mail-auth.service.js';
export type { HookListen } from './hook-server.js';

/** The check behind Dovecot's passdb, and the socket Dovecot's Lua passdb asks. */
export function createMailAuthModule(infra: Pick<Infra, 'log' | 'instruments'>, deps: { appPasswords: AppPasswordVerifier }) {
  const service = new MailAuthService(deps.appPasswords, infra.log);
  // The hook's decisions and their latency, for GET /metrics.
  const timed = {
    check: async (req: MailAuthRequest): Promise<MailAuthResult> => {
      const started = performance.now();
      try {
        const r = await service.check(req);
        infra.instruments.mailAuthDecision(r.ok ? 'ok' : 'fail', (performance.now() - started) / 1000);
        return r;
      } catch (err) {
        infra.instruments.mailAuthDecision('error', (performance.now() - started) / 1000);
        throw err;
      }
    },
  };
  return { service, startHookServer: (listen: HookListen) => startHookServer(listen, timed, infra.log) };
}
export type MailAuthModule = ReturnType<typeof createMailAuthModule>;
