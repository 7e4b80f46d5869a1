import type { Settings } from './config/settings.js';
import { createContext } from './app-context.js';
import { buildApp } from './http/app.js';
import { startHookServer } from './modules/mail-auth/hook-server.js';
import { startPolicyServer } from './modules/send-limits/policy-server.js';
import { checkDescriptorBudget } from './shared/listener-limits.js';

/** `mailsvc serve` / `npm start`: the API until SIGINT or SIGTERM. */
export async function serve(settings: Settings): Promise<void> {
  const ctx = await createContext(settings);
  if (!settings.adminPasswordHash && settings.adminPassword) {
    ctx.log.warn('MAILSVC_ADMIN_PASSWORD holds a plain password: fine for development, use mailsvc admin set-password in production');
  }
  if (!settings.adminPasswordHash && !settings.adminPassword) {
    ctx.log.warn('no administrator password is set: every sign-in fails until you run mailsvc admin set-password');
  }
  const app = await buildApp(ctx);
  // mailsvc commands on the host (admin mfa reset) signal changes the caches must not hide.
  ctx.changes.watch(() => ctx.dropCaches());
  await app.listen({ host: settings.apiHost, port: settings.apiPort });
  const { mail } = settings;
  const hook =
    mail.authHookSocket || mail.authHookListen
      ? await startHookServer({ socketPath: mail.authHookSocket ?? undefined, socketGroup: mail.authHookSocketGroup, tcp: mail.authHookListen ?? undefined, maxConnections: mail.authHookMaxConnections }, ctx.mailAuth, ctx.log)
      : null;
  if (hook) ctx.log.info({ socket: mail.authHookSocket, tcp: mail.authHookListen }, 'mail auth hook listening');
  const policy = mail.policyListen ? await startPolicyServer(mail.policyListen, ctx.sendLimits, ctx.sendCounter, ctx.log, { maxConnections: mail.policyMaxConnections }) : null;
  if (policy) ctx.log.info({ listen: mail.policyListen }, 'postfix policy service listening');
  checkDescriptorBudget({ policy: policy ? mail.policyMaxConnections : 0, hook: (hook?.servers.length ?? 0) * mail.authHookMaxConnections }, ctx.log);
  const stop = async (): Promise<void> => {
    await hook?.close();
    await policy?.close();
    await app.close();
    await ctx.close();
    process.exit(0);
  };
  process.once('SIGINT', () => void stop());
  process.once('SIGTERM', () => void stop());
}
