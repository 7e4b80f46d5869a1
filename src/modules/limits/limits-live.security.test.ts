import { afterEach, describe, expect, it } from 'vitest';
import { createTestDatabase } from '../../../test/helpers/dialects.js';
import type { TestDatabase } from '../../../test/helpers/dialects.js';
import { ADMIN_PASSWORD, startTestApp } from '../../../test/helpers/app.js';
import type { TestApp } from '../../../test/helpers/app.js';
import { call } from '../../../test/helpers/flows.js';
import { isolatedRedisUrl, redisAvailable } from '../../../test/helpers/redis.js';
import { loadSettings } from '../../config/settings.js';
import { createDb } from '../../db/database.js';
import { createInfra } from '../../infra/index.js';
import { Modules } from '../../app/modules.js';
import { loadModuleList } from '../../app/module-list.js';

/**
 * api-auth-* changed at run time hold in the RUNNING service at once, without a
 * restart: through PATCH in the same process, and through `limits set` from
 * another process (the change signal). In memory and with the lockout in Redis.
 */
const haveRedis = await redisAvailable();
const REDIS = isolatedRedisUrl(5);
/**
 * Addresses of this process's own: a second run of this file beside this one uses the same Redis
 * database, so it must neither meet these counters nor wipe them (a FLUSHDB there reset ours).
 */
const pid = process.pid;
const addr = (k: number): string => `10.${(pid >> 14) & 255}.${(pid >> 6) & 255}.${(pid & 63) * 4 + k}`;

describe('a changed api-auth-fail-limit locks out at the new limit without a restart', { timeout: 60_000 }, () => {
  let db: TestDatabase;
  let t: TestApp;
  afterEach(async () => {
    await t?.close();
    await db?.drop();
  });
  const attempt = (password: string, ip: string) => t.app.inject({ method: 'POST', url: '/auth/login', payload: { username: 'admin', password }, remoteAddress: ip });
  /** Wrong passwords until the first 429: how many were evaluated (401) before it. */
  async function failuresBeforeBlock(ip: string, max = 12): Promise<number> {
    for (let i = 0; i < max; i += 1) {
      const r = await attempt('wrong', ip);
      if (r.statusCode === 429) return i;
      expect(r.statusCode).toBe(401);
    }
    return max;
  }

  for (const redis of [false, true]) {
    it.skipIf(redis && !haveRedis)(`through PATCH /admin/limits (${redis ? 'lockout in Redis' : 'in memory'})`, async () => {
      db = await createTestDatabase('sqlite');
      t = await startTestApp(db.url, { MAILSVC_MFA_REQUIRED: 'no', MAILSVC_API_AUTH_FAIL_LIMIT: '6', ...(redis ? { MAILSVC_REDIS_URL: REDIS } : {}) });
      expect(await failuresBeforeBlock(addr(0))).toBe(6);

      const r = await call(t, 'PATCH', '/admin/limits', t.basic(), { 'api-auth-fail-limit': 2, 'api-auth-block-seconds': '2m' });
      expect(r.status).toBe(200);
      expect(await failuresBeforeBlock(addr(1))).toBe(2);
      const blocked = await attempt(ADMIN_PASSWORD, addr(1));
      expect(blocked.statusCode).toBe(429);
      expect(blocked.headers['retry-after']).toBe('120');

      // Raised again: the next address gets the higher limit.
      expect((await call(t, 'PATCH', '/admin/limits', t.basic(), { 'api-auth-fail-limit': 4 })).status).toBe(200);
      expect(await failuresBeforeBlock(addr(2))).toBe(4);
      // Only this run's counters go (not FLUSHDB: a run beside this one keeps its own).
      if (redis) await t.ctx.redis?.del(...[0, 1, 2].flatMap((k) => ['authfail', 'authfail-inflight', 'authfail-block'].map((n) => `mailsvc:${n}:${addr(k)}`)));
    });
  }

  it('through `limits set` in another process: the service reads the change signal and locks out at the new limit', async () => {
    db = await createTestDatabase('sqlite');
    t = await startTestApp(db.url, { MAILSVC_MFA_REQUIRED: 'no', MAILSVC_API_AUTH_FAIL_LIMIT: '7' });
    // A host command: its own settings, infrastructure and modules on the same database and data directory.
    const cli = new Modules(createInfra(loadSettings({ MAILSVC_DATA_DIR: t.dataDir, MAILSVC_DATABASE_URL: db.url }), { openDb: createDb }), {}, await loadModuleList());
    try {
      await (await cli.get('limits')).service.update({ 'api-auth-fail-limit': '3' });
    } finally {
      await cli.close();
    }
    const limits = (await t.ctx.modules.get('limits')).service;
    const deadline = Date.now() + 30_000;
    while (limits.value('api-auth-fail-limit') !== 3 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    expect(await failuresBeforeBlock('198.51.100.40')).toBe(3);
  });

  it('send-rate-* changed: the policy service\'s defaults and the accounts that inherit them follow at once', async () => {
    db = await createTestDatabase('sqlite');
    t = await startTestApp(db.url, { MAILSVC_MFA_REQUIRED: 'no', MAILSVC_SEND_RATE_PER_HOUR: '100' });
    await t.ctx.domains.create('example.org');
    await t.ctx.accounts.create({ address: 'inherits@example.org', password: 'long-enough-pw' });
    await t.ctx.accounts.create({ address: 'own@example.org', password: 'long-enough-pw', send_rate_per_hour: 7 });
    expect((await t.ctx.sendLimits.forUser('inherits@example.org')).per_hour).toBe(100);
    expect((await call(t, 'PATCH', '/admin/limits', t.basic(), { 'send-rate-per-hour': 40, 'send-rate-burst': 3 })).status).toBe(200);
    expect(await t.ctx.sendLimits.forUser('inherits@example.org')).toMatchObject({ per_hour: 40, burst: 3 });
    expect(await t.ctx.sendLimits.forUser('own@example.org')).toMatchObject({ per_hour: 7, burst: 3 });
    expect(await t.ctx.sendLimits.forUser('unknown@example.org')).toMatchObject({ per_hour: 40, burst: 3 });
  });
});
