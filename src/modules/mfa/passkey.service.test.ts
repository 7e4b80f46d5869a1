import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { AuthenticationResponseJSON, RegistrationResponseJSON } from '@simplewebauthn/server';
import { DIALECTS, createTestDatabase, dialectAvailable } from '../../../test/helpers/dialects.js';
import type { TestDatabase } from '../../../test/helpers/dialects.js';
import { FakeClock, startTestApp } from '../../../test/helpers/app.js';
import type { TestApp } from '../../../test/helpers/app.js';
import { REPO_ROOT } from '../../../test/helpers/cli.js';
import { isolatedRedisUrl, redisAvailable } from '../../../test/helpers/redis.js';
import { loadWebauthnSettings } from '../../config/webauthn-settings.js';
import { MemoryChallengeStore, RedisChallengeStore } from '../auth/challenge-store.js';
import type { ChallengeStore } from '../auth/challenge-store.js';
import { MfaRepository } from './mfa.repository.js';
import { PasskeyRepository } from './passkey.repository.js';
import { PasskeyService } from './passkey.service.js';

/**
 * The server side of WebAuthn on ceremonies recorded from Chromium's virtual
 * authenticator (test/passkeys.browser.test.ts, MAILSVC_RECORD_WEBAUTHN=1):
 * real signatures, replayed against each SQL dialect's storage.
 */
type Recorded<R> = { origin: string; rpId: string; challenge: string; response: R };
const FIXTURE = JSON.parse(readFileSync(join(REPO_ROOT, 'test/fixtures/webauthn/ceremonies.json'), 'utf8')) as {
  registration: Recorded<RegistrationResponseJSON>;
  authentication: Recorded<AuthenticationResponseJSON>;
  passwordless: Recorded<AuthenticationResponseJSON>;
};
const { registration, authentication, passwordless } = FIXTURE;

/** The signature counter in authenticator data (bytes 33..36, big-endian). */
const counterOf = (r: AuthenticationResponseJSON): number => Buffer.from(r.response.authenticatorData, 'base64url').readUInt32BE(33);

for (const dialect of DIALECTS) {
  describe(`passkey verification on recorded ceremonies (${dialect})`, async () => {
    const available = await dialectAvailable(dialect);
    let db: TestDatabase;
    let t: TestApp;
    const clock = new FakeClock(Date.parse('2026-11-26T12:00:00Z'));
    const service = (env: Record<string, string> = {}) =>
      new PasskeyService(
        new PasskeyRepository(t.ctx.db),
        new MfaRepository(t.ctx.db),
        clock,
        loadWebauthnSettings({ MAILSVC_PANEL_ORIGIN: registration.origin, MAILSVC_WEBAUTHN_USER_VERIFICATION: 'required', ...env }),
        'admin',
      );
    beforeEach(async () => {
      if (!available) return;
      db = await createTestDatabase(dialect);
      t = await startTestApp(db.url);
    });
    afterEach(async () => {
      await t?.close();
      await db?.drop();
    });
    const register = () => service().register('laptop', registration.response, registration.challenge);

    it.skipIf(!available)('stores the recorded registration: public key, counter, transports, device-bound', async () => {
      const view = await register();
      expect(view).toMatchObject({ name: 'laptop', transports: ['internal'], backed_up: false, device_type: 'single_device', last_used_at: null });
      const row = await t.ctx.db.selectFrom('admin_passkeys').selectAll().executeTakeFirstOrThrow();
      expect(row.credential_id).toBe(registration.response.id);
      expect(row.public_key).toMatch(/^[A-Za-z0-9_-]+$/);
      expect(row.aaguid).toMatch(/^[0-9a-f-]{36}$/);
      // The same credential twice is a conflict.
      await expect(register()).rejects.toMatchObject({ code: 'conflict' });
    });

    it.skipIf(!available)('refuses the registration for another challenge, origin or RP ID', async () => {
      const other = 'AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA';
      await expect(service().register('x', registration.response, other)).rejects.toMatchObject({ code: 'bad_request' });
      await expect(service({ MAILSVC_PANEL_ORIGIN: 'http://localhost:1' }).register('x', registration.response, registration.challenge)).rejects.toMatchObject({ code: 'bad_request' });
      await expect(service({ MAILSVC_PANEL_ORIGIN: 'https://mail.example.org' }).register('x', registration.response, registration.challenge)).rejects.toMatchObject({ code: 'bad_request' });
      expect(await t.ctx.db.selectFrom('admin_passkeys').selectAll().execute()).toHaveLength(0);
    });

    it.skipIf(!available)('accepts the recorded assertion once; the counter moves; the same counter again reads as a clone', async () => {
      await register();
      const s = service();
      const ok = await s.verifyAssertion(authentication.response, authentication.challenge, false);
      expect(ok.ok).toBe(true);
      const row = await t.ctx.db.selectFrom('admin_passkeys').selectAll().executeTakeFirstOrThrow();
      expect(Number(row.counter)).toBe(counterOf(authentication.response));
      expect(Number(row.last_used_at)).toBe(clock.now());
      const again = await s.verifyAssertion(authentication.response, authentication.challenge, false);
      expect(again).toMatchObject({ ok: false, clone: { stored: counterOf(authentication.response), presented: counterOf(authentication.response) } });
    });

    it.skipIf(!available)('refuses the assertion for another challenge, origin or RP ID, and changes nothing', async () => {
      await register();
      const before = await t.ctx.db.selectFrom('admin_passkeys').selectAll().executeTakeFirstOrThrow();
      expect(await service().verifyAssertion(authentication.response, registration.challenge, false)).toEqual({ ok: false });
      expect(await service({ MAILSVC_PANEL_ORIGIN: 'http://localhost:1' }).verifyAssertion(authentication.response, authentication.challenge, false)).toEqual({ ok: false });
      expect(await service({ MAILSVC_PANEL_ORIGIN: 'https://localhost.example.org', MAILSVC_WEBAUTHN_RP_ID: 'example.org' }).verifyAssertion(authentication.response, authentication.challenge, false)).toEqual({ ok: false });
      // A credential nobody registered.
      expect(await service().verifyAssertion({ ...authentication.response, id: 'bm9ib2R5', rawId: 'bm9ib2R5' }, authentication.challenge, false)).toEqual({ ok: false });
      expect(await t.ctx.db.selectFrom('admin_passkeys').selectAll().executeTakeFirstOrThrow()).toEqual(before);
    });

    it.skipIf(!available)('a stored counter ahead of the assertion is a possible clone, refused', async () => {
      await register();
      const presented = counterOf(authentication.response);
      await t.ctx.db.updateTable('admin_passkeys').set({ counter: presented + 5 }).execute();
      const r = await service().verifyAssertion(authentication.response, authentication.challenge, false);
      expect(r).toMatchObject({ ok: false, clone: { stored: presented + 5, presented } });
      expect(Number((await t.ctx.db.selectFrom('admin_passkeys').select('counter').executeTakeFirstOrThrow()).counter)).toBe(presented + 5);
    });

    it.skipIf(!available)('passwordless: the recorded discoverable assertion names the administrator\'s user handle', async () => {
      await register();
      const handle = passwordless.response.response.userHandle ?? '';
      expect(handle).not.toBe('');
      // Another handle (another user of this RP ID): refused.
      await t.ctx.db.updateTable('admin_mfa').set({ webauthn_user_id: 'c29tZW9uZS1lbHNl' }).execute();
      expect(await service().verifyAssertion(passwordless.response, passwordless.challenge, true)).toEqual({ ok: false });
      await t.ctx.db.updateTable('admin_mfa').set({ webauthn_user_id: handle }).execute();
      expect((await service().verifyAssertion(passwordless.response, passwordless.challenge, true)).ok).toBe(true);
    });
  });
}

const haveRedis = await redisAvailable();
const REDIS = isolatedRedisUrl(15);
describe('a WebAuthn challenge kept with its sign-in challenge is taken once', () => {
  const redis = new Redis(REDIS, { lazyConnect: true, maxRetriesPerRequest: 1 });
  afterAll(() => redis.disconnect());
  const clock = new FakeClock(Date.now());
  const stores: [string, () => ChallengeStore, boolean][] = [
    ['memory', () => new MemoryChallengeStore(clock), true],
    ['redis', () => new RedisChallengeStore(redis, clock), haveRedis],
  ];
  for (const [name, make, on] of stores) {
    it.skipIf(!on)(`${name}: set, taken by one of parallel callers, gone with the challenge`, async () => {
      const store = make();
      const id = `c-${process.pid}-${name}`;
      expect(await store.setWebauthn(id, { challenge: 'x', expiresAt: clock.now() + 30_000 })).toBe(false);
      await store.create({ id, kind: 'signin', subject: 'admin', methods: ['webauthn'], expiresAt: clock.now() + 60_000, failures: 0, smsSends: 0, smsCodeHash: null, webauthn: null });
      expect(await store.takeWebauthn(id)).toBeNull();
      expect(await store.setWebauthn(id, { challenge: 'challenge-1', expiresAt: clock.now() + 30_000 })).toBe(true);
      expect(await store.setWebauthn(id, { challenge: 'challenge-2', expiresAt: clock.now() + 30_000 })).toBe(true);
      const taken = await Promise.all(Array.from({ length: 8 }, () => store.takeWebauthn(id)));
      expect(taken.filter((v) => v !== null)).toEqual(['challenge-2']);
      expect((await store.get(id))?.kind).toBe('signin');
      expect(await store.consume(id)).toBe(true);
      expect(await store.setWebauthn(id, { challenge: 'late', expiresAt: clock.now() + 30_000 })).toBe(false);
    });
    it.skipIf(!on)(`${name}: a WebAuthn challenge past its own expiry is not handed out, though its sign-in challenge lives`, async () => {
      const store = make();
      const id = `e-${process.pid}-${name}`;
      await store.create({ id, kind: 'signin', subject: 'admin', methods: ['webauthn'], expiresAt: clock.now() + 300_000, failures: 0, smsSends: 0, smsCodeHash: null, webauthn: null });
      expect(await store.setWebauthn(id, { challenge: 'short', expiresAt: clock.now() + 30_000 })).toBe(true);
      clock.advance(30_000);
      expect(await store.takeWebauthn(id)).toBeNull();
      expect((await store.get(id))?.webauthn).toBeNull();
      expect(await store.consume(id)).toBe(true);
    });
  }
});
