import { mkdtempSync, rmSync } from 'node:fs';
import { createHash } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import pino from 'pino';
import type { Logger } from 'pino';
import { Writable } from 'node:stream';
import { loadSettings } from '../../src/config/settings.js';
import type { Settings } from '../../src/config/settings.js';
import { createContext } from './context.js';
import type { ContextOptions, TestContext as AppContext } from './context.js';
import { buildApp } from '../../src/http/app.js';
import type { Clock } from '../../src/shared/clock.js';

export const ADMIN_USER = 'admin';
export const ADMIN_PASSWORD = 'correct horse battery staple';

export class FakeClock implements Clock {
  constructor(public t = Date.now()) {}
  now(): number {
    return this.t;
  }
  advance(ms: number): void {
    this.t += ms;
  }
}

export type TestApp = {
  app: FastifyInstance;
  ctx: AppContext;
  settings: Settings;
  dataDir: string;
  /** Every log line the service wrote, as text. */
  logs: string[];
  basic(user?: string, pass?: string): string;
  close(): Promise<void>;
};

/**
 * The service built exactly as `mailsvc serve` builds it, on the given
 * database, with a temp data dir and its log lines captured.
 */
export async function startTestApp(databaseUrl: string, env: Record<string, string> = {}, opts: ContextOptions = {}): Promise<TestApp> {
  const dataDir = mkdtempSync(join(tmpdir(), 'mailsvc-test-'));
  const settings = loadSettings({
    MAILSVC_DATA_DIR: dataDir,
    MAILSVC_DATABASE_URL: databaseUrl,
    MAILSVC_ADMIN_USERNAME: ADMIN_USER,
    MAILSVC_ADMIN_PASSWORD: ADMIN_PASSWORD,
    MAILSVC_LOG_LEVEL: 'debug',
    // One key per database, as on a real host: apps reopened on it can open its secrets.
    MAILSVC_SECRET_KEY: createHash('sha256').update(databaseUrl).digest('base64'),
    // Never the machine's /var/backups/mailsvc: a failed verify left there by an
    // operator's run made /health/details of every test app read degraded.
    MAILSVC_BACKUP_LOCAL_DIR: join(dataDir, 'backups'),
    ...env,
  });
  const logs: string[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _enc, cb) {
      logs.push(chunk.toString('utf8'));
      cb();
    },
  });
  const log: Logger = pino({ level: 'debug', redact: ['req.headers.authorization', 'req.headers.cookie'] }, sink);
  const ctx = await createContext(settings, { log, ...opts });
  const app = await buildApp(ctx.modules);
  // As `mailsvc serve` does: host commands signal changes to the caches.
  ctx.changes.watch(() => ctx.dropCaches());
  return {
    app,
    ctx,
    settings,
    dataDir,
    logs,
    basic: (user = ADMIN_USER, pass = ADMIN_PASSWORD) => `Basic ${Buffer.from(`${user}:${pass}`).toString('base64')}`,
    async close() {
      await app.close();
      await ctx.close();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}
