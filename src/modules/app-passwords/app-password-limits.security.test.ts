import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DIALECTS, createTestDatabase, dialectAvailable } from '../../../test/helpers/dialects.js';
import type { TestDatabase } from '../../../test/helpers/dialects.js';
import { startTestApp } from '../../../test/helpers/app.js';
import type { TestApp } from '../../../test/helpers/app.js';
import { portalSignIn } from '../../../test/helpers/portal.js';

// A mailbox holds at most MAILSVC_APP_PASSWORDS_PER_MAILBOX app passwords and gets at
// most MAILSVC_APP_PASSWORD_CREATIONS_PER_HOUR new ones an hour, whoever makes them
// (the portal, the administrator); names are short.
for (const dialect of DIALECTS) {
  describe(`app passwords per mailbox are capped and rate-limited (${dialect})`, { timeout: 120_000 }, async () => {
    const available = await dialectAvailable(dialect);
    let db: TestDatabase;
    let t: TestApp;

    beforeAll(async () => {
      if (!available) return;
      db = await createTestDatabase(dialect);
      t = await startTestApp(db.url, { MAILSVC_MFA_REQUIRED: 'no', MAILSVC_ENABLE_USER_PORTAL: 'yes', MAILSVC_APP_PASSWORDS_PER_MAILBOX: '4', MAILSVC_APP_PASSWORD_CREATIONS_PER_HOUR: '6' });
      await t.ctx.domains.create('example.org');
      for (const user of ['alice', 'bob', 'carol', 'dave']) await t.ctx.accounts.create({ address: `${user}@example.org`, password: `${user}-mailbox-pw` });
    });
    afterAll(async () => {
      await t?.close();
      await db?.drop();
    });

    const admin = (method: 'POST' | 'PATCH' | 'GET', url: string, body?: unknown) =>
      t.app.inject({ method, url, headers: { authorization: t.basic(), ...(body === undefined ? {} : { 'content-type': 'application/json' }) }, ...(body === undefined ? {} : { payload: JSON.stringify(body) }) });

    it.skipIf(!available)('the cap: MAILSVC_APP_PASSWORDS_PER_MAILBOX, the next one is 409 in the portal and the API; a revoked one frees its place', async () => {
      // Not a limit key: the limit keys are the contract's closed list.
      expect((await admin('GET', '/admin/limits')).json<Record<string, number>>()).not.toHaveProperty('app-passwords-per-mailbox');
      const alice = await portalSignIn(t.app, 'alice@example.org', 'alice-mailbox-pw');
      const ids: string[] = [];
      for (const n of [1, 2, 3, 4]) {
        const r = await alice.call('POST', 'app-passwords', { name: `device ${n}` });
        expect(r.statusCode, r.body).toBe(201);
        ids.push(r.json<{ id: string }>().id);
      }
      const over = await alice.call('POST', 'app-passwords', { name: 'one too many' });
      expect(over.statusCode).toBe(409);
      expect(over.json<{ detail: string }>().detail).toContain('MAILSVC_APP_PASSWORDS_PER_MAILBOX');
      expect((await alice.call('POST', 'device-profile', { app_password_name: 'iphone' })).statusCode).toBe(409);
      expect((await admin('POST', '/accounts/alice@example.org/app-passwords', { name: 'by the admin' })).statusCode).toBe(409);
      expect(await t.ctx.appPasswords.list('alice@example.org')).toHaveLength(4);
      expect((await alice.call('DELETE', `app-passwords/${ids[0] ?? ''}`)).statusCode).toBe(204);
      expect((await alice.call('POST', 'app-passwords', { name: 'replacement' })).statusCode).toBe(201);
      expect(await t.ctx.appPasswords.list('alice@example.org')).toHaveLength(4);
    });

    it.skipIf(!available)('creations racing for the last places never leave the mailbox over the cap', async () => {
      const made = await Promise.all(Array.from({ length: 8 }, (_, n) => admin('POST', '/accounts/bob@example.org/app-passwords', { name: `parallel ${n}` })));
      const codes = made.map((r) => r.statusCode);
      // 8 at once against a cap of 4 and 6 an hour: some are refused by the cap (409), some by the rate (429).
      expect(codes.every((c) => c === 201 || c === 409 || c === 429), codes.join()).toBe(true);
      expect(codes).toContain(409);
      const held = await t.ctx.appPasswords.list('bob@example.org');
      expect(held.length).toBeLessThanOrEqual(4);
      expect(held).toHaveLength(codes.filter((c) => c === 201).length);
    });

    it.skipIf(!available)('the rate: MAILSVC_APP_PASSWORD_CREATIONS_PER_HOUR; the next creation is 429, other mailboxes unaffected', async () => {
      const carol = await portalSignIn(t.app, 'carol@example.org', 'carol-mailbox-pw');
      for (const n of [1, 2, 3, 4, 5, 6]) {
        const r = await carol.call('POST', 'app-passwords', { name: `device ${n}` });
        expect(r.statusCode, r.body).toBe(201);
        // Revoked at once: only the rate can refuse the next one, never the cap.
        expect((await carol.call('DELETE', `app-passwords/${r.json<{ id: string }>().id}`)).statusCode).toBe(204);
      }
      const r = await carol.call('POST', 'app-passwords', { name: 'device 7' });
      expect(r.statusCode).toBe(429);
      expect(r.json<{ detail: string }>().detail).toContain('MAILSVC_APP_PASSWORD_CREATIONS_PER_HOUR');
      expect((await admin('POST', '/accounts/carol@example.org/app-passwords', { name: 'by the admin' })).statusCode).toBe(429);
      expect((await admin('POST', '/accounts/dave@example.org/app-passwords', { name: 'dave laptop' })).statusCode).toBe(201);
    });

    it.skipIf(!available)('names: at most 64 characters (422 from the schema, in the portal and the API), nothing stored', async () => {
      const dave = await portalSignIn(t.app, 'dave@example.org', 'dave-mailbox-pw');
      const before = (await t.ctx.appPasswords.list('dave@example.org')).length;
      expect((await dave.call('POST', 'app-passwords', { name: 'x'.repeat(65) })).statusCode).toBe(422);
      expect((await dave.call('POST', 'device-profile', { app_password_name: 'x'.repeat(255) })).statusCode).toBe(422);
      expect((await admin('POST', '/accounts/dave@example.org/app-passwords', { name: 'x'.repeat(255) })).statusCode).toBe(422);
      await expect(t.ctx.appPasswords.create('dave@example.org', { name: 'x'.repeat(65) })).rejects.toThrow(/1 to 64 characters/);
      expect((await dave.call('POST', 'app-passwords', { name: 'x'.repeat(64) })).statusCode).toBe(201);
      expect(await t.ctx.appPasswords.list('dave@example.org')).toHaveLength(before + 1);
    });
  });
}
