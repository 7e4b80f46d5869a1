import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DIALECTS, createTestDatabase, dialectAvailable } from '../../../test/helpers/dialects.js';
import type { TestDatabase } from '../../../test/helpers/dialects.js';
import { startTestApp } from '../../../test/helpers/app.js';
import type { TestApp } from '../../../test/helpers/app.js';
import { portalSignIn } from '../../../test/helpers/portal.js';

// A new password, whoever sets it, ends what the old one opened: the
// mailbox's portal sessions always, its app passwords when the reset asks for
// it (revoke_app_passwords / --revoke-app-passwords), in one transaction.
for (const dialect of DIALECTS) {
  describe(`a password reset ends the portal sessions (${dialect})`, { timeout: 120_000 }, async () => {
    const available = await dialectAvailable(dialect);
    let db: TestDatabase;
    let t: TestApp;
    const kicked: string[] = [];

    beforeAll(async () => {
      if (!available) return;
      db = await createTestDatabase(dialect);
      t = await startTestApp(db.url, { MAILSVC_MFA_REQUIRED: 'no', MAILSVC_ENABLE_USER_PORTAL: 'yes' }, {
        kicker: { kick: (user) => { kicked.push(user); return Promise.resolve({ kicked: true, detail: 'ok' }); } },
      });
      await t.ctx.domains.create('example.org');
      for (const user of ['alice', 'bob', 'carol']) await t.ctx.accounts.create({ address: `${user}@example.org`, password: `${user}-mailbox-pw` });
    });
    afterAll(async () => {
      await t?.close();
      await db?.drop();
    });

    const patch = (address: string, body: Record<string, unknown>) =>
      t.app.inject({ method: 'PATCH', url: `/accounts/${address}`, headers: { authorization: t.basic(), 'content-type': 'application/json' }, payload: JSON.stringify(body) });
    const mailLogin = async (user: string, password: string) => (await t.ctx.mailAuth.check({ user, password, protocol: 'imap', remoteIp: '127.0.0.1' })).ok;

    it.skipIf(!available)('the administrator\'s reset (PATCH password): the old portal session is 401 and makes no app password; app passwords survive it', async () => {
      const alice = await portalSignIn(t.app, 'alice@example.org', 'alice-mailbox-pw');
      const bob = await portalSignIn(t.app, 'bob@example.org', 'bob-mailbox-pw');
      const app = await t.ctx.appPasswords.create('alice@example.org', { name: 'phone' });
      kicked.length = 0;
      expect((await patch('alice@example.org', { password: 'alice-reset-password' })).statusCode).toBe(200);
      expect((await alice.call('GET', 'me')).statusCode).toBe(401);
      expect((await alice.call('POST', 'app-passwords', { name: 'attacker' })).statusCode).toBe(401);
      expect((await t.ctx.appPasswords.list('alice@example.org')).map((p) => p.name)).toEqual(['phone']);
      // Another mailbox's session is untouched; the mail sessions were kicked as before.
      expect((await bob.call('GET', 'me')).statusCode).toBe(200);
      expect(kicked).toEqual(['alice@example.org']);
      // Without revoke_app_passwords they keep working (see docs/portal.md).
      expect(await mailLogin('alice@example.org', app.password)).toBe(true);
    });

    it.skipIf(!available)('a reset with revoke_app_passwords: every app password of the mailbox stops logging in through the hook, another mailbox\'s stays', async () => {
      const one = await t.ctx.appPasswords.create('bob@example.org', { name: 'laptop' });
      const two = await t.ctx.appPasswords.create('bob@example.org', { name: 'phone' });
      const carols = await t.ctx.appPasswords.create('carol@example.org', { name: 'tablet' });
      expect(await mailLogin('bob@example.org', one.password)).toBe(true);
      const r = await patch('bob@example.org', { password: 'bob-reset-password', revoke_app_passwords: true });
      expect(r.statusCode, r.body).toBe(200);
      expect(await mailLogin('bob@example.org', one.password)).toBe(false);
      expect(await mailLogin('bob@example.org', two.password)).toBe(false);
      expect(await t.ctx.appPasswords.list('bob@example.org')).toEqual([]);
      expect(await mailLogin('carol@example.org', carols.password)).toBe(true);
      expect(await mailLogin('bob@example.org', 'bob-reset-password')).toBe(true);
    });

    it.skipIf(!available)('revoke_app_passwords without a new password is 400 and changes nothing', async () => {
      const kept = await t.ctx.appPasswords.create('carol@example.org', { name: 'watch' });
      const r = await patch('carol@example.org', { revoke_app_passwords: true });
      expect(r.statusCode).toBe(400);
      expect(r.json<{ detail: string }>().detail).toContain('revoke_app_passwords');
      expect(await mailLogin('carol@example.org', kept.password)).toBe(true);
    });

    it.skipIf(!available)('the CLI\'s path (setPassword, with revokeAppPasswords): portal sessions end, app passwords revoked', async () => {
      const carol = await portalSignIn(t.app, 'carol@example.org', 'carol-mailbox-pw');
      const app = await t.ctx.appPasswords.create('carol@example.org', { name: 'desktop' });
      await t.ctx.accounts.setPassword('carol@example.org', 'carol-reset-password', { revokeAppPasswords: true });
      expect((await carol.call('GET', 'me')).statusCode).toBe(401);
      expect(await mailLogin('carol@example.org', app.password)).toBe(false);
    });
  });
}
