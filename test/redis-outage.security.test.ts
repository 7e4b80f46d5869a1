import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { createTestDatabase } from './helpers/dialects.js';
import type { TestDatabase } from './helpers/dialects.js';
import { ADMIN_PASSWORD, startTestApp } from './helpers/app.js';
import type { TestApp } from './helpers/app.js';
import { sleep } from './helpers/listener-load.js';
import { skipNotice } from './helpers/services.js';

const REDIS_SERVER = ['/usr/bin/redis-server', '/usr/local/bin/redis-server'].find((p) => existsSync(p));

function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = createServer();
    s.listen(0, '127.0.0.1', () => {
      const addr = s.address();
      const port = typeof addr === 'object' && addr ? addr.port : 0;
      s.close(() => resolve(port));
    });
  });
}

/** A private redis-server this test may stop, stall and restart (the shared one stays untouched). */
class PrivateRedis {
  child: ChildProcess | undefined;
  private readonly dir = mkdtempSync(join(tmpdir(), 'mailsvc-redis-'));
  constructor(readonly port: number) {}
  async start(): Promise<void> {
    this.child = spawn(REDIS_SERVER ?? 'redis-server', ['--port', String(this.port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', this.dir], { stdio: 'ignore' });
    const probe = new Redis(this.port, '127.0.0.1', { lazyConnect: true, retryStrategy: () => null, maxRetriesPerRequest: 0 });
    for (let i = 0; i < 50; i++) {
      try {
        await probe.connect();
        await probe.ping();
        probe.disconnect();
        return;
      } catch {
        await sleep(100);
      }
    }
    throw new Error('private redis-server did not start');
  }
  async kill(): Promise<void> {
    const c = this.child;
    if (!c || c.exitCode !== null) return;
    await new Promise<void>((resolve) => {
      c.once('exit', () => resolve());
      c.kill('SIGKILL');
    });
  }
  signal(sig: 'SIGSTOP' | 'SIGCONT'): void {
    this.child?.kill(sig);
  }
  async close(): Promise<void> {
    this.signal('SIGCONT');
    await this.kill();
    rmSync(this.dir, { recursive: true, force: true });
  }
}

type Timed = { status: number; body: Record<string, unknown>; retryAfter: string | undefined; ms: number };

/**
 * When Redis (the lockout counters, challenges and token revocations) is out of
 * reach, the API answers at once with 503 and Retry-After, never lets a
 * credential through unchecked, and /health says so.
 */
describe.skipIf(!REDIS_SERVER)('Redis out of reach: fail fast with 503, fail closed, /health degraded', () => {
  let redis: PrivateRedis;
  let db: TestDatabase;
  let t: TestApp;
  let token = '';
  if (!REDIS_SERVER) skipNotice('redis-server binary', 'not installed');

  beforeAll(async () => {
    redis = new PrivateRedis(await freePort());
    await redis.start();
    db = await createTestDatabase('sqlite');
    t = await startTestApp(db.url, { MAILSVC_MFA_REQUIRED: 'no', MAILSVC_REDIS_URL: `redis://127.0.0.1:${redis.port}/0` });
  });
  afterAll(async () => {
    await t?.close();
    await db?.drop();
    await redis?.close();
  });

  const call = async (method: 'GET' | 'POST', url: string, headers: Record<string, string> = {}, payload?: object): Promise<Timed> => {
    const t0 = performance.now();
    const r = await t.app.inject({ method, url, headers, ...(payload ? { payload } : {}) });
    const retryAfter = r.headers['retry-after'];
    return { status: r.statusCode, body: r.json(), retryAfter: retryAfter === undefined ? undefined : String(retryAfter), ms: performance.now() - t0 };
  };
  const login = () => call('POST', '/auth/login', {}, { username: 'admin', password: ADMIN_PASSWORD });
  const waitFor = async (cond: () => boolean, ms: number) => {
    for (const end = Date.now() + ms; !cond() && Date.now() < end; ) await sleep(20);
  };

  it('with Redis up: sign-in works and /health is ok', async () => {
    const r = await login();
    expect(r.status).toBe(200);
    token = String(r.body.access_token);
    expect(await call('GET', '/health')).toMatchObject({ status: 200, body: { status: 'ok' } });
    const details = await call('GET', '/health/details?components=false', { authorization: `Bearer ${token}` });
    expect(details.body).toMatchObject({ status: 'ok', redis: { configured: true, reachable: true } });
  });

  it('Redis stopped: login (right password), Basic and Bearer get 503 + Retry-After within 200 ms; /health is 503 degraded', async () => {
    await redis.kill();
    await waitFor(() => t.ctx.redis?.status !== 'ready', 3000);
    const attempts = [await login(), await call('GET', '/health/details', { authorization: t.basic() }), await call('GET', '/health/details', { authorization: `Bearer ${token}` })];
    for (const a of attempts) {
      expect(a.status).toBe(503);
      expect(a.body).toEqual({ detail: 'Service temporarily unavailable: its state store (Redis) cannot be reached' });
      expect(a.retryAfter).toBe('5');
      expect(a.ms).toBeLessThan(200);
    }
    const health = await call('GET', '/health');
    expect(health).toMatchObject({ status: 503, body: { status: 'degraded' } });
    expect(health.ms).toBeLessThan(100);
    const details = await t.ctx.health.details();
    expect(details).toMatchObject({ status: 'degraded', redis: { configured: true, reachable: false } });
    console.log(`[redis down] login ${attempts[0]?.ms.toFixed(1)} ms, Basic ${attempts[1]?.ms.toFixed(1)} ms, Bearer ${attempts[2]?.ms.toFixed(1)} ms, /health ${health.ms.toFixed(1)} ms`);
    // Exactly one warning for the outage, however many requests failed.
    expect(t.logs.filter((l) => l.includes('redis connection error')).length).toBe(1);
  });

  it('Redis back: the client reconnects by itself and sign-in works again', async () => {
    await redis.start();
    await waitFor(() => t.ctx.redis?.status === 'ready', 5000);
    expect((await login()).status).toBe(200);
    expect((await call('GET', '/health')).status).toBe(200);
  });

  it('Redis stalled (SIGSTOP): a request fails with 503 after the command timeout instead of hanging', async () => {
    redis.signal('SIGSTOP');
    try {
      const r = await login();
      expect(r.status).toBe(503);
      expect(r.retryAfter).toBe('5');
      expect(r.ms).toBeLessThan(2500);
      console.log(`[redis stalled] login answered 503 in ${r.ms.toFixed(0)} ms`);
    } finally {
      redis.signal('SIGCONT');
    }
  });
});
