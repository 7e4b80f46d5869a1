import { randomBytes } from 'node:crypto';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { Redis } from 'ioredis';
import { createTestDatabase, dialectAvailable } from '../../../test/helpers/dialects.js';
import type { TestDatabase } from '../../../test/helpers/dialects.js';
import { ADMIN_PASSWORD, startTestApp } from '../../../test/helpers/app.js';
import type { TestApp } from '../../../test/helpers/app.js';
import { call } from '../../../test/helpers/flows.js';
import { isolatedRedisUrl, redisAvailable } from '../../../test/helpers/redis.js';
import { startFakeSmsProvider } from '../../../test/helpers/fake-sms-provider.js';
import type { FakeSmsProvider } from '../../../test/helpers/fake-sms-provider.js';

/**
 * Finding 11 of the security review: whoever holds the password can start any
 * number of challenges (three SMS each). Sends are limited per client address
 * and per phone per hour.
 */
const PHONE = '+4930123456789';
const REDIS = isolatedRedisUrl(14);

describe('SMS sends per address and per phone per hour', async () => {
  const withRedis = (await redisAvailable()) && (await dialectAvailable('postgres'));
  let provider: FakeSmsProvider;
  let apps: TestApp[] = [];
  let db: TestDatabase | undefined;
  let redis: Redis | undefined;
  beforeAll(async () => {
    provider = await startFakeSmsProvider();
  });
  afterAll(async () => {
    await provider?.close();
  });
  afterEach(async () => {
    for (const t of apps) await t.close();
    apps = [];
    await db?.drop();
    db = undefined;
    await redis?.flushdb();
    redis?.disconnect();
    redis = undefined;
    provider.reset();
  });

  const start = async (dialect: 'sqlite' | 'postgres', instances: number, env: Record<string, string>): Promise<TestApp[]> => {
    db = await createTestDatabase(dialect);
    const all = {
      MAILSVC_OUTBOUND_ALLOW_HOSTS: provider.hostPort,
      MAILSVC_API_AUTH_FAIL_LIMIT: '50',
      MAILSVC_MFA_ALLOW_BASIC_WITHOUT_TOKEN: 'yes',
      MAILSVC_SECRET_KEY: randomBytes(32).toString('base64'),
      ...env,
    };
    for (let i = 0; i < instances; i += 1) apps.push(await startTestApp(db.url, all));
    const t = apps[0] as TestApp;
    expect((await call(t, 'PUT', '/auth/mfa/providers', t.basic(), { code: 'provider_a', base_url: provider.origin, api_key: 'k' })).status).toBe(200);
    expect((await call(t, 'PATCH', '/auth/mfa/sms', t.basic(), { phone: PHONE, enabled: true })).status).toBe(200);
    return apps;
  };

  /** Signs in from `ip` as often as needed and asks for `n` SMS (three per challenge): the statuses and the last error. */
  const sends = async (ip: string, n: number): Promise<{ codes: number[]; detail: string }> => {
    const codes: number[] = [];
    let detail = '';
    let challenge = '';
    for (let i = 0; i < n; i += 1) {
      const t = apps[i % apps.length] as TestApp;
      if (i % 3 === 0) {
        const login = await t.app.inject({ method: 'POST', url: '/auth/login', remoteAddress: ip, payload: { username: 'admin', password: ADMIN_PASSWORD } });
        challenge = login.json<{ challenge_id: string }>().challenge_id;
      }
      const r = await t.app.inject({ method: 'POST', url: '/auth/mfa/sms', remoteAddress: ip, payload: { challenge_id: challenge } });
      codes.push(r.statusCode);
      if (r.statusCode !== 200) detail = r.json<{ detail: string }>().detail;
    }
    return { codes, detail };
  };

  it('the defaults: 10 per address per hour, then 429; another address then meets the phone limit of 10', async () => {
    await start('sqlite', 1, {});
    const x = await sends('198.51.100.41', 13);
    expect(x.codes).toEqual([...Array(10).fill(200), 429, 429, 429]);
    expect(x.detail).toMatch(/^SMS send limit reached: at most 10 SMS per hour from this address; try again in \d+ minute/);
    const y = await sends('198.51.100.42', 2);
    expect(y.codes).toEqual([429, 429]);
    expect(y.detail).toMatch(/at most 10 SMS per hour to this phone/);
    expect(provider.requests).toHaveLength(10);
  });

  it.skipIf(!withRedis)('two instances sharing Redis share the counts; the phone is not in Redis', async () => {
    redis = new Redis(REDIS);
    await redis.flushdb();
    await start('postgres', 2, { MAILSVC_REDIS_URL: REDIS, MAILSVC_SMS_SENDS_PER_IP_HOUR: '3', MAILSVC_SMS_SENDS_PER_PHONE_HOUR: '5' });
    const x = await sends('198.51.100.43', 4);
    expect(x.codes).toEqual([200, 200, 200, 429]);
    expect(x.detail).toMatch(/at most 3 SMS per hour from this address/);
    const y = await sends('198.51.100.44', 4);
    expect(y.codes).toEqual([200, 200, 429, 429]);
    expect(y.detail).toMatch(/at most 5 SMS per hour to this phone/);
    // The refused send to the phone was not charged to the address.
    expect(await redis.get('mailsvc:sms-ip:198.51.100.44')).toBe('2');
    expect(provider.requests).toHaveLength(5);
    const keys = await redis.keys('mailsvc:sms-*');
    expect(keys.length).toBeGreaterThan(0);
    expect(keys.join(' ')).not.toContain('30123456789');
  });
});
