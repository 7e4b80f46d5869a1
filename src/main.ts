import type { Settings } from './config/settings.js';
import { openService } from './app/service.js';
import { buildApp } from './http/app.js';

/** `mailsvc serve` / `npm start`: the API, the mail auth hook and the policy service until SIGINT or SIGTERM. */
export async function serve(settings: Settings): Promise<void> {
  const modules = await openService(settings);
  const { log } = modules.infra;
  if (!settings.adminPasswordHash && settings.adminPassword) {
    log.warn('MAILSVC_ADMIN_PASSWORD holds a plain password: fine for development, use mailsvc admin set-password in production');
  }
  if (!settings.adminPasswordHash && !settings.adminPassword) {
    log.warn('no administrator password is set: every sign-in fails until you run mailsvc admin set-password');
  }
  const app = await buildApp(modules);
  // mailsvc commands on the host (admin mfa reset) signal changes the caches must not hide.
  modules.infra.changes.watch(() => void modules.dropCaches());
  const { mail } = settings;
  const hook =
    mail.authHookSocket || mail.authHookListen
      ? await (await modules.mailAuth()).startHookServer({ socketPath: mail.authHookSocket ?? undefined, socketGroup: mail.authHookSocketGroup, tcp: mail.authHookListen ?? undefined })
      : null;
  if (hook) log.info({ socket: mail.authHookSocket, tcp: mail.authHookListen }, 'mail auth hook listening');
  const policy = mail.policyListen ? await (await modules.sendLimits()).startPolicyServer(mail.policyListen) : null;
  if (policy) log.info({ listen: mail.policyListen }, 'postfix policy service listening');
  // The API last: when it answers, the hook and the policy service already do.
  await app.listen({ host: settings.apiHost, port: settings.apiPort });
  const stop = async (): Promise<void> => {
    await hook?.close();
    await policy?.close();
    await app.close();
    await modules.infra.close();
    process.exit(0);
  };
  process.once('SIGINT', () => void stop());
  process.once('SIGTERM', () => void stop());
}
