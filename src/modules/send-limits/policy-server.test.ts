import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createConnection } from 'node:net';
import { Redis } from 'ioredis';
import { createTestDatabase } from '../../../test/helpers/dialects.js';
import type { TestDatabase } from '../../../test/helpers/dialects.js';
import { startTestApp } from '../../../test/helpers/app.js';
import type { TestApp } from '../../../test/helpers/app.js';
import { isolatedRedisUrl, redisAvailable } from '../../../test/helpers/redis.js';
import { startPolicyServer } from './policy-server.js';

/** Sends Postfix policy requests on one connection and reads the actions. */
function policy(port: number, users: string[]): Promise<string[]> {
  return new Promise((resolve, reject) => {
    const c = createConnection(port, '127.0.0.1');
    let data = '';
    c.setEncoding('utf8');
    c.on('data', (d: string) => {
      data += d;
      const actions = data.split('\n\n').filter(Boolean);
      if (actions.length === users.length) {
        c.end();
        resolve(actions.map((a) => a.replace(/^action=/, '')));
      }
    });
    c.on('error', reject);
    c.write(users.map((u) => `request=smtpd_access_policy\nprotocol_state=END-OF-MESSAGE\nsasl_username=${u}\nclient_address=127.0.0.1\n\n`).join(''));
  });
}

const REDIS = isolatedRedisUrl(8);

for (const store of ['memory', 'redis'] as const) {
  describe(`Postfix policy service: per-account send limits (${store})`, async () => {
    const available = store === 'memory' || (await redisAvailable());
    let db: TestDatabase;
    let t: TestApp;
    let port: number;
    let close: () => Promise<void>;
    beforeEach(async () => {
      if (!available) return;
      if (store === 'redis') {
        const r = new Redis(REDIS);
        await r.flushdb();
        r.disconnect();
      }
      db = await createTestDatabase('sqlite');
      t = await startTestApp(db.url, { MAILSVC_MFA_REQUIRED: 'no', MAILSVC_SEND_RATE_PER_HOUR: '4', ...(store === 'redis' ? { MAILSVC_REDIS_URL: REDIS } : {}) });
      await t.ctx.domains.create('example.org');
      await t.ctx.accounts.create({ address: 'fast@example.org', password: 'long-enough-pw', send_rate_per_minute: 2 });
      await t.ctx.accounts.create({ address: 'default@example.org', password: 'long-enough-pw' });
      const s = await startPolicyServer({ host: '127.0.0.1', port: 0 }, t.ctx.sendLimits, t.ctx.sendCounter, t.ctx.log);
      port = s.port;
      close = s.close;
    });
    afterEach(async () => {
      await close?.();
      await t?.close();
      await db?.drop();
    });

    it.skipIf(!available)('N per minute: message N+1 is deferred with a 4xx; other accounts still send', async () => {
      const a = await policy(port, ['fast@example.org', 'fast@example.org', 'fast@example.org']);
      expect(a.slice(0, 2)).toEqual(['DUNNO', 'DUNNO']);
      expect(a[2]).toMatch(/^450 4\.7\.1 Sending rate limit reached \(2 messages per minute\)/);
      expect(await policy(port, ['default@example.org'])).toEqual(['DUNNO']);
    });

    it.skipIf(!available)('close() ends the connection smtpd keeps between messages at once, not at its idle timeout', async () => {
      const c = createConnection(port, '127.0.0.1');
      let data = '';
      let ended = false;
      c.setEncoding('utf8');
      c.on('data', (d: string) => (data += d));
      c.on('end', () => (ended = true));
      c.write('request=smtpd_access_policy\nprotocol_state=END-OF-MESSAGE\nsasl_username=default@example.org\nclient_address=127.0.0.1\n\n');
      await expect.poll(() => data).toBe('action=DUNNO\n\n');
      // The connection stays open (idle timeout 120 s); close() ends it and resolves.
      await close();
      close = async () => undefined;
      expect(ended).toBe(true);
      c.destroy();
    });

    it.skipIf(!available)('0 inherits the global default (MAILSVC_SEND_RATE_PER_HOUR=4); deferred messages are not counted', async () => {
      const a = await policy(port, Array(6).fill('default@example.org'));
      expect(a.filter((x) => x === 'DUNNO')).toHaveLength(4);
      expect(a.slice(4).every((x) => x.startsWith('450 '))).toBe(true);
    });

    it.skipIf(!available)('unauthenticated mail is not counted; an unknown SASL user gets the defaults', async () => {
      expect(await policy(port, ['', '', '', '', '', ''])).toEqual(Array(6).fill('DUNNO'));
      const unknown = await policy(port, Array(5).fill('ghost@example.org'));
      expect(unknown.filter((x) => x === 'DUNNO')).toHaveLength(4);
    });

    it.skipIf(!available)('a changed limit reaches the policy service through the account change and through sync', async () => {
      await t.ctx.accounts.update('default@example.org', { send_rate_per_minute: 1 });
      expect(await policy(port, ['default@example.org', 'default@example.org'])).toEqual(['DUNNO', expect.stringMatching(/^450 /)]);
      // A change made behind the service's back (SQL by hand) leaves the map stale until a sync.
      await t.ctx.db.updateTable('accounts').set({ send_rate_per_minute: 7 }).where('address', '=', 'fast@example.org').execute();
      expect(await t.ctx.sendLimits.forUser('fast@example.org')).toMatchObject({ per_minute: 2 });
      const r = await t.app.inject({ method: 'POST', url: '/accounts/send-limits/sync', headers: { authorization: t.basic() } });
      expect(r.statusCode).toBe(200);
      expect(r.json()).toEqual({ accounts: 2, defaults: { burst: 0, per_minute: 0, per_hour: 4, per_day: 0, per_week: 0, per_month: 0 } });
      expect(await t.ctx.sendLimits.forUser('fast@example.org')).toMatchObject({ per_minute: 7, per_hour: 4 });
    });
  });
}
