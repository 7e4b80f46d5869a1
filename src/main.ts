import type { Settings } from './config/settings.js';
import { createContext } from './app-context.js';
import { buildApp } from './http/app.js';

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
  await app.listen({ host: settings.apiHost, port: settings.apiPort });
  const stop = async (): Promise<void> => {
    await app.close();
    await ctx.close();
    process.exit(0);
  };
  process.once('SIGINT', () => void stop());
  process.once('SIGTERM', () => void stop());
}
