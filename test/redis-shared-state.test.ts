import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Redis } from 'ioredis';
import { randomBytes } from 'node:crypto';
import { createTestDatabase, dialectAvailable } from './helpers/dialects.js';
import type { TestDatabase } from './helpers/dialects.js';
import { ADMIN_PASSWORD, startTestApp } from './helpers/app.js';
import type { TestApp } from './helpers/app.js';
import { isolatedRedisUrl, redisAvailable } from './helpers/redis.js';
import { enableTotp } from './helpers/flows.js';
import { oathtoolCode, oathtoolInstalled } from './helpers/totp.js';
import { startFakeSmsProvider } from './helpers/fake-sms-provider.js';

// Redis database 7 belongs to this file, so parallel test files never meet in it.
const REDIS = isolatedRedisUrl(7);
const LIMIT = 5;

describe('two API instances sharing one Redis and one PostgreSQL database', async () => {
  const available = (await redisAvailable()) && (await dialectAvailable('postgres')) && oathtoolInstalled();
  let db: TestDatabase;
  let a: TestApp;
  let b: TestApp;
  let urlA: string;
  let urlB: string;
  let redis: Redis;
  let sharedKey = '';
  /** The TOTP secret the challenge test enrols (the SMS test switches that factor off again). */
  let totpSecret = '';

  beforeAll(async () => {
    if (!available) return;
    redis = new Redis(REDIS);
    await redis.flushdb();
    db = await createTestDatabase('postgres');
    // Instances that share a database must share the key that seals its secrets.
    sharedKey = randomBytes(32).toString('base64');
    const env = { MAILSVC_SECRET_KEY: sharedKey, MAILSVC_REDIS_URL: REDIS, MAILSVC_API_AUTH_FAIL_LIMIT: String(LIMIT), MAILSVC_MFA_REQUIRED: 'no' };
    a = await startTestApp(db.url, env);
    b = await startTestApp(db.url, env);
    urlA = await a.app.listen({ host: '127.0.0.1', port: 0 });
    urlB = await b.app.listen({ host: '127.0.0.1', port: 0 });
  });
  afterAll(async () => {
    await a?.close();
    await b?.close();
    await db?.drop();
    await redis?.flushdb();
    redis?.disconnect();
  });

  const req = (base: string, path: string, init: { method?: string; body?: unknown; auth?: string } = {}) =>
    fetch(`${base}${path}`, {
      method: init.method ?? 'POST',
      headers: { ...(init.body === undefined ? {} : { 'content-type': 'application/json' }), ...(init.auth ? { authorization: init.auth } : {}) },
      ...(init.body === undefined ? {} : { body: JSON.stringify(init.body) }),
    });

  it.skipIf(!available)('100 parallel wrong logins over both instances: exactly api-auth-fail-limit 401s, the rest 429', async () => {
    const answers = await Promise.all(
      Array.from({ length: 100 }, (_, i) => req(i % 2 === 0 ? urlA : urlB, '/auth/login', { body: { username: 'admin', password: `wrong-${i}` } })),
    );
    const codes = answers.map((r) => r.status);
    expect(codes.filter((c) => c === 401)).toHaveLength(LIMIT);
    expect(codes.filter((c) => c === 429)).toHaveLength(100 - LIMIT);
    // The block is shared: the right password is refused on both.
    for (const base of [urlA, urlB]) {
      const r = await req(base, '/auth/login', { body: { username: 'admin', password: ADMIN_PASSWORD } });
      expect(r.status).toBe(429);
      expect(r.headers.get('retry-after')).toBe('900');
    }
    expect(await redis.keys('mailsvc:authfail*')).not.toHaveLength(0);
    await redis.del(await redis.keys('mailsvc:authfail*'));
  });

  it.skipIf(!available)('a token revoked on one instance is refused by the other at once', async () => {
    const login = await req(urlA, '/auth/login', { body: { username: 'admin', password: ADMIN_PASSWORD } });
    expect(login.status).toBe(200);
    const token = ((await login.json()) as { access_token: string }).access_token;
    const health = await req(urlB, '/health/details?components=false', { method: 'GET', auth: `Bearer ${token}` });
    expect(await health.json()).toMatchObject({ status: 'ok', redis: { configured: true, reachable: true }, database: { dialect: 'postgres', reachable: true } });
    expect((await req(urlB, '/auth/mfa', { method: 'GET', auth: `Bearer ${token}` })).status).toBe(200);
    expect((await req(urlA, '/auth/logout', { body: { access_token: token } })).status).toBe(200);
    expect((await req(urlB, '/auth/mfa', { method: 'GET', auth: `Bearer ${token}` })).status).toBe(401);
  });

  it.skipIf(!available)('a challenge issued by one instance is answered on the other, once, and lives in Redis', async () => {
    const secret = await enableTotp(a);
    totpSecret = secret;
    const login = await req(urlA, '/auth/login', { body: { username: 'admin', password: ADMIN_PASSWORD } });
    const { challenge_id } = (await login.json()) as { challenge_id: string };
    expect(await redis.exists(`mailsvc:challenge:${challenge_id}`)).toBe(1);
    const ttl = await redis.pttl(`mailsvc:challenge:${challenge_id}`);
    expect(ttl).toBeGreaterThan(290_000);
    expect(ttl).toBeLessThanOrEqual(300_000);
    const code = oathtoolCode(secret);
    const verify = await req(urlB, '/auth/mfa/verify', { body: { challenge_id, method: 'totp', code } });
    expect(verify.status).toBe(200);
    expect(await redis.exists(`mailsvc:challenge:${challenge_id}`)).toBe(0);
    const again = await req(urlA, '/auth/mfa/verify', { body: { challenge_id, method: 'totp', code } });
    expect(again.status).toBe(401);
  });

  it.skipIf(!available)('an SMS code is kept in Redis only as a keyed hash, and at most 3 sends count', async () => {
    const provider = await startFakeSmsProvider();
    try {
      // The provider is allow-listed for this instance only; it sends, the other verifies.
      const c = await startTestApp(db.url, {
        MAILSVC_SECRET_KEY: sharedKey, MAILSVC_REDIS_URL: REDIS, MAILSVC_MFA_REQUIRED: 'no', MAILSVC_OUTBOUND_ALLOW_HOSTS: provider.hostPort,
      });
      try {
        const basic = c.basic();
        // Switching a factor off needs re-authentication (docs/auth.md): the password and a TOTP code of the next step
        // (the challenge test used the current one, and a step is accepted once).
        const reauth = Buffer.from(`${ADMIN_PASSWORD}:${oathtoolCode(totpSecret, Date.now() + 30_000)}`).toString('base64');
        expect((await c.app.inject({ method: 'DELETE', url: '/auth/mfa/totp', headers: { authorization: basic, 'x-mailsvc-reauth': reauth } })).statusCode).toBeLessThan(300);
        await c.app.inject({ method: 'PUT', url: '/auth/mfa/providers', headers: { authorization: basic }, payload: { code: 'provider_a', base_url: provider.origin, api_key: 'k' } });
        await c.app.inject({ method: 'PATCH', url: '/auth/mfa/sms', headers: { authorization: basic }, payload: { phone: '+4930123456789', enabled: true } });
        const login = await c.app.inject({ method: 'POST', url: '/auth/login', payload: { username: 'admin', password: ADMIN_PASSWORD } });
        const { challenge_id } = login.json<{ challenge_id: string }>();
        for (let i = 0; i < 3; i += 1) expect((await c.app.inject({ method: 'POST', url: '/auth/mfa/sms', payload: { challenge_id } })).statusCode).toBe(200);
        expect((await req(urlA, '/auth/mfa/sms', { body: { challenge_id } })).status).toBe(429);
        const code = /(\d{6})/.exec((provider.requests.at(-1)?.body as { message: string }).message)?.[1] ?? '';
        const stored = await redis.hgetall(`mailsvc:challenge:${challenge_id}`);
        expect(stored.sms_sends).toBe('3');
        expect(stored.sms_code).toMatch(/^[0-9a-f]{64}$/);
        expect(JSON.stringify(stored)).not.toContain(code);
        const verify = await req(urlB, '/auth/mfa/verify', { body: { challenge_id, method: 'sms', code } });
        expect(verify.status).toBe(200);
      } finally {
        await c.close();
      }
    } finally {
      await provider.close();
    }
  });
});
