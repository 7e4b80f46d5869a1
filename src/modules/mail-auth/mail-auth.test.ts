import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createConnection } from 'node:net';
import { join } from 'node:path';
import { DIALECTS, createTestDatabase, dialectAvailable } from '../../../test/helpers/dialects.js';
import type { TestDatabase } from '../../../test/helpers/dialects.js';
import { FakeClock, startTestApp } from '../../../test/helpers/app.js';
import type { TestApp } from '../../../test/helpers/app.js';
import { startHookServer } from './hook-server.js';

const hex = (s: string): string => Buffer.from(s, 'utf8').toString('hex');

/** One request over the real Unix socket, as the Lua passdb sends it. */
function ask(socket: string, lines: string[]): Promise<string[]> {
  return new Promise((resolve, reject) => {
    const c = createConnection(socket);
    let data = '';
    c.setEncoding('utf8');
    c.on('data', (d: string) => {
      data += d;
      if (data.split('\n').length > lines.length) {
        c.end();
        resolve(data.trim().split('\n'));
      }
    });
    c.on('error', reject);
    c.write(lines.map((l) => `${l}\n`).join(''));
  });
}
const auth = (user: string, pass: string, protocol = 'imap', ip = '192.0.2.10') => `AUTH\t${protocol}\t${ip}\t${hex(user)}\t${hex(pass)}`;

for (const dialect of DIALECTS) {
  describe(`mail authentication hook over its Unix socket (${dialect})`, async () => {
    const available = await dialectAvailable(dialect);
    let db: TestDatabase;
    let t: TestApp;
    let socket: string;
    let close: () => Promise<void>;
    const clock = new FakeClock();
    beforeEach(async () => {
      if (!available) return;
      db = await createTestDatabase(dialect);
      t = await startTestApp(db.url, {}, { clock, kicker: { kick: async () => ({ kicked: false, detail: 'test' }) } });
      await t.ctx.domains.create('example.org');
      await t.ctx.accounts.create({ address: 'alice@example.org', password: 'alice-primary-pw' });
      await t.ctx.accounts.create({ address: 'bob@example.org', password: 'bob-primary-pw1', require_app_password: true });
      socket = join(t.dataDir, 'hook.sock');
      close = (await startHookServer({ socketPath: socket }, t.ctx.mailAuth, t.ctx.log)).close;
    });
    afterEach(async () => {
      await close?.();
      await t?.close();
      await db?.drop();
    });

    it.skipIf(!available)('accepts the primary password and answers with the canonical user; refuses a wrong one', async () => {
      expect(await ask(socket, [auth('Alice@Example.ORG', 'alice-primary-pw')])).toEqual([`OK\t${hex('alice@example.org')}`]);
      expect(await ask(socket, [auth('alice@example.org', 'wrong-password')])).toEqual(['FAIL']);
      expect(await ask(socket, [auth('nobody@example.org', 'alice-primary-pw')])).toEqual(['FAIL']);
    });

    it.skipIf(!available)('require_app_password refuses the primary password; an app password works and its last use is recorded', async () => {
      expect(await ask(socket, [auth('bob@example.org', 'bob-primary-pw1')])).toEqual(['FAIL']);
      const app = await t.ctx.appPasswords.create('bob@example.org', { name: 'phone' });
      expect(await ask(socket, [auth('bob@example.org', app.password, 'pop3', '198.51.100.7')])).toEqual([`OK\t${hex('bob@example.org')}`]);
      // Recorded once the answer is written, so it may land just after it.
      await expect.poll(async () => (await t.ctx.appPasswords.list('bob@example.org'))[0]).toMatchObject({ last_used_ip: '198.51.100.7', last_used_at: new Date(clock.t).toISOString() });
      // Another account's app password is not this account's.
      expect(await ask(socket, [auth('alice@example.org', app.password)])).toEqual(['FAIL']);
    });

    it.skipIf(!available)('revoked, expired and tampered app passwords, inactive accounts and domains are refused', async () => {
      const app = await t.ctx.appPasswords.create('alice@example.org', { name: 'a', expires_at: new Date(clock.t + 60_000).toISOString() });
      const [id, secret = ''] = app.password.split('.');
      expect(await ask(socket, [auth('alice@example.org', `${id}.${secret.slice(0, -1)}${secret.endsWith('a') ? 'b' : 'a'}`)])).toEqual(['FAIL']);
      expect(await ask(socket, [auth('alice@example.org', app.password)])).toEqual([`OK\t${hex('alice@example.org')}`]);
      clock.advance(61_000);
      expect(await ask(socket, [auth('alice@example.org', app.password)])).toEqual(['FAIL']);
      const second = await t.ctx.appPasswords.create('alice@example.org', { name: 'b' });
      await t.ctx.appPasswords.revoke('alice@example.org', second.id);
      expect(await ask(socket, [auth('alice@example.org', second.password)])).toEqual(['FAIL']);
      await t.ctx.accounts.update('alice@example.org', { active: false });
      expect(await ask(socket, [auth('alice@example.org', 'alice-primary-pw')])).toEqual(['FAIL']);
      await t.ctx.accounts.update('alice@example.org', { active: true });
      await t.ctx.domains.setActive('example.org', false);
      expect(await ask(socket, [auth('alice@example.org', 'alice-primary-pw')])).toEqual(['FAIL']);
    });

    it.skipIf(!available)('asked with `userdb`, OK carries the userdb fields of the SQL user_query: user always, quota_rule with a quota', async () => {
      const field = (f: string) => hex(f);
      expect(await ask(socket, [`${auth('Alice@Example.ORG', 'alice-primary-pw')}\tuserdb`])).toEqual([`OK\t${hex('alice@example.org')}\t${field('user=alice@example.org')}`]);
      await t.ctx.accounts.update('bob@example.org', { quota_bytes: 1073741824 });
      const app = await t.ctx.appPasswords.create('bob@example.org', { name: 'phone' });
      expect(await ask(socket, [`${auth('bob@example.org', app.password)}\tuserdb`, auth('bob@example.org', app.password)])).toEqual([
        `OK\t${hex('bob@example.org')}\t${field('user=bob@example.org')}\t${field('quota_rule=*:bytes=1073741824')}`,
        // Without it (a Lua script from before the prefetch userdb): the short answer it understands.
        `OK\t${hex('bob@example.org')}`,
      ]);
      expect(await ask(socket, [`${auth('bob@example.org', 'bob-primary-pw1')}\tuserdb`, `${auth('alice@example.org', 'alice-primary-pw')}\tuserdb2`])).toEqual(['FAIL', 'ERROR\tmalformed request']);
    });

    it.skipIf(!available)('several requests on one connection are answered in order; junk gets ERROR', async () => {
      const answers = await ask(socket, [auth('alice@example.org', 'wrong-password'), 'HELLO', auth('alice@example.org', 'alice-primary-pw'), `AUTH\timap\t\tzz\t00`]);
      expect(answers).toEqual(['FAIL', 'ERROR\tmalformed request', `OK\t${hex('alice@example.org')}`, 'ERROR\tmalformed request']);
    });
  });
}
