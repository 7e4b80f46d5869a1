import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import type { Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DIALECTS, createTestDatabase, dialectAvailable } from './helpers/dialects.js';
import type { TestDatabase } from './helpers/dialects.js';
import { startTestApp } from './helpers/app.js';
import type { TestApp } from './helpers/app.js';
import { mailDaemonsUnavailable, startDovecot } from './helpers/mail-daemons.js';
import type { Dovecot } from './helpers/mail-daemons.js';
import { imapLogin } from './helpers/mail-clients.js';
import { skipNotice } from './helpers/services.js';
import { startHookServer } from '../src/modules/mail-auth/hook-server.js';

// Real: mailsvc's hook and database, Dovecot from deploy/ (Lua passdb, SQL
// fallback, prefetch userdb, SQL userdb). The userdb fields a hook login gets
// through the prefetch userdb must be exactly what the SQL userdb returns for
// that account (`doveadm user`, which has no passdb and so asks the SQL userdb):
// a drift between the hook's fields, the two blocks' default_fields and the
// SQL user_query fails here.
const daemonsMissing = mailDaemonsUnavailable();
if (daemonsMissing) skipNotice('Dovecot', daemonsMissing);

const ALICE = 'alice@example.org';
const CAROL = 'carol@example.org';
const PW = { alice: 'alice-primary-pw', carol: 'carol-primary-pw' };
const QUOTA = 3 * 2 ** 30;

/** `doveadm user`: a `field\tvalue` heading, then one `name\tvalue` line each. */
function userFields(out: string): Record<string, string> {
  const lines = out.trim().split('\n');
  if (lines[0] !== 'field\tvalue') throw new Error(`doveadm user: ${out}`);
  return Object.fromEntries(lines.slice(1).map((l) => [l.slice(0, l.indexOf('\t')), l.slice(l.indexOf('\t') + 1)]));
}

/**
 * `doveadm auth login`: the indented `name=value` lines under `userdb extra
 * fields:` (the first is the user name alone). auth_mech and auth_user (the
 * name logged in with) are Dovecot's own fields of each login, not the userdb's.
 */
function loginUserdbFields(out: string): Record<string, string> {
  const lines = out.split('\n');
  const start = lines.indexOf('userdb extra fields:');
  if (start < 0) throw new Error(`doveadm auth login: ${out}`);
  const fields: Record<string, string> = {};
  for (const l of lines.slice(start + 1)) {
    if (!l.startsWith(' ')) break;
    const eq = l.indexOf('=');
    if (eq > 0 && !['auth_mech', 'auth_user'].includes(l.slice(0, eq).trim())) fields[l.slice(0, eq).trim()] = l.slice(eq + 1);
  }
  return fields;
}

for (const dialect of DIALECTS) {
  describe(`prefetch userdb for hook logins on real Dovecot (${dialect})`, { timeout: 120_000 }, async () => {
    const available = (await dialectAvailable(dialect)) && daemonsMissing === null;
    let db: TestDatabase;
    let t: TestApp;
    let dovecot: Dovecot;
    let sockDir = '';
    let closeHook: () => Promise<void> = async () => undefined;
    let appPw = '';

    beforeAll(async () => {
      if (!available) return;
      db = await createTestDatabase(dialect);
      t = await startTestApp(db.url, {}, { kicker: { kick: async () => ({ kicked: false, detail: 'test' }) } });
      await t.ctx.domains.create('example.org');
      await t.ctx.accounts.create({ address: ALICE, password: PW.alice, quota_bytes: QUOTA });
      await t.ctx.accounts.create({ address: CAROL, password: PW.carol });
      appPw = (await t.ctx.appPasswords.create(ALICE, { name: 'phone' })).password;
      sockDir = mkdtempSync(join(tmpdir(), 'mailsvc-run-'));
      chmodSync(sockDir, 0o755);
      const hookSocket = join(sockDir, 'auth-hook.sock');
      const hook = await startHookServer({ socketPath: hookSocket }, t.ctx.mailAuth, t.ctx.log);
      chmodSync(hookSocket, 0o666);
      closeHook = hook.close;
      // auth_debug: the log says which userdb answered each lookup.
      dovecot = await startDovecot({ dialect, databaseUrl: db.url, hookSocket, extra: 'auth_debug = yes' });
    }, 120_000);
    afterAll(async () => {
      await dovecot?.stop();
      await closeHook();
      await t?.close();
      await db?.drop();
      if (sockDir) rmSync(sockDir, { recursive: true, force: true });
    });

    /** The SQL userdb's fields for the account (doveadm user: a userdb-only lookup). */
    const sqlUserdb = async (user: string) => userFields(await dovecot.doveadm(['user', user]));
    /** A full login (passdb, then userdb as a login process asks it): the userdb fields it got. */
    const loginUserdb = async (user: string, password: string) => {
      const out = await dovecot.doveadm(['auth', 'login', user, password]);
      return { out, fields: loginUserdbFields(out) };
    };

    it.skipIf(!available)('doveadm user (no passdb) goes past prefetch to the SQL userdb: home, vmail uid, quota_rule', async () => {
      const alice = await sqlUserdb(ALICE);
      expect(alice).toMatchObject({ uid: '65534', quota_rule: `*:bytes=${QUOTA}`, mail: 'maildir:~/Maildir' });
      expect(alice.home).toMatch(/\/vmail\/example\.org\/alice$/);
      expect(await sqlUserdb(CAROL)).not.toHaveProperty('quota_rule');
    });

    it.skipIf(!available)('a hook login gets its userdb from prefetch, with exactly the SQL userdb fields', async () => {
      for (const [login, password, account] of [['Alice@Example.ORG', appPw, ALICE], [ALICE, PW.alice, ALICE], [CAROL, PW.carol, CAROL]] as const) {
        const before = dovecot.logs().length;
        const { out, fields } = await loginUserdb(login, password);
        // The log up to the userdb answer sent for this login (the log process may write it a moment later).
        const answered = new RegExp(`master userdb out: USER\\t\\d+\\t${account.replace('.', '\\.')}\\t`);
        await expect.poll(() => dovecot.logs().slice(before)).toMatch(answered);
        // This login's part only: from the master's REQUEST for it to the answer (Dovecot's log process may
        // still be writing the lines of the previous step, a `doveadm user` with its SQL lookup, after `before`).
        const upto = dovecot.logs().slice(before).split(answered)[0] ?? '';
        const log = upto.slice(Math.max(0, upto.lastIndexOf('master in: REQUEST')));
        expect(log).toMatch(new RegExp(`prefetch\\(${account.replace('.', '\\.')}\\): success`));
        expect(log).not.toMatch(/sql\([^)]*\): Performing userdb lookup/);
        expect(fields, out).toEqual(await sqlUserdb(account));
      }
      expect((await imapLogin(dovecot.imapPort, 'Alice@Example.ORG', appPw)).ok).toBe(true);
    });

    it.skipIf(!available)('with the hook down, a login through the SQL passdb gets the SQL userdb (prefetch has nothing)', async () => {
      await closeHook();
      closeHook = async () => undefined;
      const before = dovecot.logs().length;
      const { out, fields } = await loginUserdb(ALICE, PW.alice);
      await expect.poll(() => dovecot.logs().slice(before)).toMatch(/master userdb out: USER\t/);
      const log = dovecot.logs().slice(before).split(/master userdb out: USER\t/)[0] ?? '';
      expect(log).toMatch(/prefetch\(alice@example\.org\): passdb didn't return userdb entries, trying the next userdb/);
      expect(log).toMatch(/sql\(alice@example\.org\): Performing userdb lookup/);
      expect(fields).toMatchObject({ quota_rule: `*:bytes=${QUOTA}` });
      expect(fields, out).toEqual(await sqlUserdb(ALICE));
      expect((await imapLogin(dovecot.imapPort, ALICE, PW.alice)).ok).toBe(true);
    });
  });
}

/**
 * The Lua passdb passes on only the userdb fields it allows (quota_rule of the shape `*:bytes=N`): a hook that
 * answers OK with uid, gid, home or mail of its choosing (a compromised service) cannot point a login at root's
 * or another user's files. A hook of the test's own answers every login so.
 */
describe('the Lua passdb takes only allowed userdb fields from the hook (real Dovecot)', { timeout: 120_000 }, () => {
  const available = daemonsMissing === null;
  let db: TestDatabase;
  let dovecot: Dovecot;
  let server: Server;
  let sockDir = '';
  const hex = (s: string) => Buffer.from(s, 'utf8').toString('hex');
  const HOSTILE = ['user=root', 'uid=0', 'gid=0', 'home=/root', 'mail=maildir:/etc', 'quota_rule=*:bytes=5; storage=0', 'mail_plugins=acl', 'quota_rule=*:bytes=1234'];

  beforeAll(async () => {
    if (!available) return;
    db = await createTestDatabase('sqlite');
    sockDir = mkdtempSync(join(tmpdir(), 'mailsvc-run-'));
    chmodSync(sockDir, 0o755);
    const hookSocket = join(sockDir, 'auth-hook.sock');
    server = createServer((conn) => {
      let buf = '';
      conn.setEncoding('utf8').on('data', (d: string) => {
        buf += d;
        let nl: number;
        while ((nl = buf.indexOf('\n')) >= 0) {
          const line = buf.slice(0, nl);
          buf = buf.slice(nl + 1);
          const user = Buffer.from(line.split('\t')[3] ?? '', 'hex').toString('utf8');
          conn.write(`OK\t${hex(user)}\t${HOSTILE.map(hex).join('\t')}\n`);
        }
      });
      conn.on('error', () => undefined);
    });
    await new Promise<void>((res) => server.listen(hookSocket, res));
    chmodSync(hookSocket, 0o666);
    dovecot = await startDovecot({ dialect: 'sqlite', databaseUrl: db.url, hookSocket });
  }, 120_000);
  afterAll(async () => {
    await dovecot?.stop();
    await new Promise<void>((res) => (server ? server.close(() => res()) : res()));
    await db?.drop();
    if (sockDir) rmSync(sockDir, { recursive: true, force: true });
  });

  it.skipIf(!available)('uid, gid, home, mail and a malformed quota_rule are dropped; a well-formed quota_rule passes', async () => {
    const out = await dovecot.doveadm(['auth', 'login', 'mallory@example.org', 'any password']);
    const fields = loginUserdbFields(out);
    expect(fields, out).toMatchObject({ quota_rule: '*:bytes=1234' });
    expect(fields.uid, out).not.toBe('0');
    expect(fields.gid, out).not.toBe('0');
    expect(fields.home ?? '', out).not.toBe('/root');
    expect(fields.mail ?? '', out).not.toMatch(/\/etc/);
    expect(fields, out).not.toHaveProperty('mail_plugins');
    expect(fields.home, out).toMatch(/\/vmail\/example\.org\/mallory$/);
    expect(out).not.toMatch(/\broot\b/);
  });
});
