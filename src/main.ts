import type { Settings } from './config/settings.js';
import type { SocketListen } from './config/mail-settings.js';
import { bindOrExplain, socketInUse } from './app/listeners.js';
import { openService } from './app/service.js';
import { buildApp } from './http/app.js';
import { AppError } from './shared/errors.js';
import { checkDescriptorBudget } from './shared/listener-limits.js';

type Closable = { close(): Promise<void> };

const where = (l: SocketListen): string => ('path' in l ? `unix:${l.path}` : `${l.host}:${l.port}`);

/** Binds a listener of Postfix's, refusing a Unix socket another running mailsvc serves (its setting named). */
async function bindSocket<T>(key: string, listen: SocketListen, start: () => Promise<T>): Promise<T> {
  if ('path' in listen && (await socketInUse(listen.path))) {
    throw new AppError('unavailable', `${key} (${where(listen)}) is served by another running mailsvc: stop it, or set ${key} to another path`);
  }
  return bindOrExplain(key, where(listen), start);
}

/**
 * `mailsvc serve` / `npm start`: the Postfix policy service and lookup tables, the Dovecot auth
 * hook and the API until SIGINT or SIGTERM. The fixed addresses are bound
 * first, the API last: a second instance stops at the first one taken, with
 * nothing of its own left open, and when the API answers the others already do.
 */
export async function serve(settings: Settings): Promise<void> {
  const modules = await openService(settings);
  const { log } = modules.infra;
  if (!settings.adminPasswordHash && settings.adminPassword) {
    log.warn('MAILSVC_ADMIN_PASSWORD holds a plain password: fine for development, use mailsvc admin set-password in production');
  }
  if (!settings.adminPasswordHash && !settings.adminPassword) {
    log.warn('no administrator password is set: every sign-in fails until you run mailsvc admin set-password');
  }
  const open: Closable[] = [];
  const closeAll = async (): Promise<void> => {
    for (const c of open.reverse()) await c.close().catch(() => undefined);
    await modules.close();
  };
  try {
    const app = await buildApp(modules);
    const { mail } = settings;
    const policyListen = mail.policyListen;
    if (policyListen) {
      const sendLimits = await modules.get('send-limits');
      open.push(await bindSocket('MAILSVC_POLICY_LISTEN', policyListen, () => sendLimits.startPolicyServer(policyListen, { maxConnections: mail.policyMaxConnections })));
      log.info({ listen: where(policyListen) }, 'postfix policy service listening');
    }
    const mapsListen = mail.mapsListen;
    if (mapsListen) {
      const routing = await modules.get('routing');
      open.push(await bindSocket('MAILSVC_MAPS_LISTEN', mapsListen, () => routing.startMapServer(mapsListen, { maxConnections: mail.policyMaxConnections })));
      log.info({ listen: where(mapsListen) }, 'postfix lookup tables (socketmap) listening');
    }
    if (mail.authHookSocket || mail.authHookListen) {
      if (mail.authHookSocket && (await socketInUse(mail.authHookSocket))) {
        throw new AppError('unavailable', `MAILSVC_MAIL_AUTH_SOCKET (${mail.authHookSocket}) is served by another running mailsvc: stop it, or set MAILSVC_MAIL_AUTH_SOCKET to another path`);
      }
      const mailAuth = await modules.get('mail-auth');
      const hookWhere = [mail.authHookSocket, mail.authHookListen && `${mail.authHookListen.host}:${mail.authHookListen.port}`].filter(Boolean).join(', ');
      const hook = await bindOrExplain(mail.authHookListen ? 'MAILSVC_MAIL_AUTH_LISTEN' : 'MAILSVC_MAIL_AUTH_SOCKET', hookWhere, () =>
        mailAuth.startHookServer({
          socketPath: mail.authHookSocket ?? undefined, socketGroup: mail.authHookSocketGroup, tcp: mail.authHookListen ?? undefined, maxConnections: mail.authHookMaxConnections,
        }),
      );
      open.push(hook);
      log.info({ socket: mail.authHookSocket, tcp: mail.authHookListen }, 'mail auth hook listening');
    }
    // The listeners' connection caps, plus a reserve for the API, must fit in the open-file limit.
    const hooks = (mail.authHookSocket ? 1 : 0) + (mail.authHookListen ? 1 : 0);
    checkDescriptorBudget({ policy: policyListen ? mail.policyMaxConnections : 0, maps: mapsListen ? mail.policyMaxConnections : 0, hook: hooks * mail.authHookMaxConnections }, log);
    open.push({ close: () => app.close() });
    await bindOrExplain('MAILSVC_API_PORT', `${settings.apiHost}:${settings.apiPort}`, () => app.listen({ host: settings.apiHost, port: settings.apiPort }));
    // Other hosts' `mailsvc topology show` list this instance by its heartbeat in Redis.
    open.push((await modules.get('report')).startHeartbeat(`${settings.apiHost}:${settings.apiPort}`));
  } catch (err) {
    await closeAll();
    throw err;
  }
  // Jobs left by a process that died are marked failed; queued ones start.
  await (await modules.get('jobs')).runner.recover();
  // mailsvc commands on the host (admin mfa reset) signal changes the caches must not hide.
  modules.infra.changes.watch(() => void modules.dropCaches());
  const stop = async (): Promise<void> => {
    await closeAll();
    process.exit(0);
  };
  process.once('SIGINT', () => void stop());
  process.once('SIGTERM', () => void stop());
}
