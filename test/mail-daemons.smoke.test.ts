import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createDb } from '../src/db/database.js';
import { migrateToLatest } from '../src/app/schema.js';
import { hashPassword } from '../src/modules/auth/admin-credentials.js';
import { DIALECTS, createTestDatabase, dialectAvailable } from './helpers/dialects.js';
import type { TestDatabase } from './helpers/dialects.js';
import { skipNotice } from './helpers/services.js';
import { mailDaemonsUnavailable, startDovecot, startPostfix } from './helpers/mail-daemons.js';
import type { Dovecot, Postfix } from './helpers/mail-daemons.js';
import { imapLogin, imapSession, pop3Login, swaksSend } from './helpers/mail-clients.js';
import { startStubMailHook, startStubPolicyService } from './helpers/stub-mail-hook.js';
import type { StubMailHook, StubPolicyService } from './helpers/stub-mail-hook.js';

/**
 * Dovecot and Postfix run from deploy/ against each database dialect, with a
 * stub in place of mailsvc's auth hook and policy service: proves the daemon
 * side of the contract (Lua passdb, SQL fallback, userdb, Postfix lookups,
 * SASL, policy at end of data, doveadm kick).
 */

const ALICE = 'alice@example.org';
const ALICE_PW = 'alice-primary-Pw1';
const APP_PW = 'app1.secretsecret';
const BOB = 'bob@example.org';
const BOB_PW = 'bob-primary-Pw1';
// Carol's primary password is right in SQL, but the hook refuses it (as
// mailsvc would, e.g. for a disabled login): the hook's no must be final.
const CAROL = 'carol@example.org';
const CAROL_PW = 'carol-primary-Pw1';
const WRONG = 'not-the-password';

const unavailable = mailDaemonsUnavailable();
if (unavailable !== null) skipNotice('Dovecot, Postfix and swaks', unavailable);

/** Whether `check` turns true within 20 seconds (generous: a busy 2-core machine; it returns as soon as it holds). */
async function eventually(check: () => Promise<boolean>): Promise<boolean> {
  for (const deadline = Date.now() + 20_000; Date.now() < deadline; await new Promise((r) => setTimeout(r, 100))) {
    if (await check()) return true;
  }
  return false;
}

async function seed(url: string): Promise<void> {
  const db = createDb(url);
  try {
    await migrateToLatest(db);
    const now = Date.now();
    await db.insertInto('domains').values({ name: 'example.org', active: 1, created_at: now, updated_at: now }).execute();
    const domain = await db.selectFrom('domains').select('id').where('name', '=', 'example.org').executeTakeFirstOrThrow();
    const noLimits = { send_rate_burst: 0, send_rate_per_minute: 0, send_rate_per_hour: 0, send_rate_per_day: 0, send_rate_per_week: 0, send_rate_per_month: 0 };
    const account = async (address: string, password: string, requireApp: number, quota = 0) => ({
      domain_id: domain.id, local_part: address.split('@')[0] ?? '', address, display_name: '',
      password_hash: `{ARGON2ID}${await hashPassword(password)}`, require_app_password: requireApp,
      quota_bytes: quota, active: 1, ...noLimits, created_at: now, updated_at: now,
    });
    await db.insertInto('accounts').values([await account(ALICE, ALICE_PW, 0, 1 << 30), await account(BOB, BOB_PW, 1), await account(CAROL, CAROL_PW, 0)]).execute();
    await db.insertInto('aliases').values({ domain_id: domain.id, source: 'team@example.org', destination: BOB, active: 1, created_at: now, updated_at: now }).execute();
  } finally {
    await db.destroy();
  }
}

for (const dialect of DIALECTS) {
  describe(`Dovecot and Postfix from deploy/ (${dialect})`, { timeout: 120_000 }, async () => {
    const available = unavailable === null && (await dialectAvailable(dialect));
    let db: TestDatabase;
    let hookDir: string;
    let hook: StubMailHook;
    let policy: StubPolicyService;
    let dovecot: Dovecot;
    let postfix: Postfix;
    const imap = (user: string, pass: string) => imapLogin(dovecot.imapPort, user, pass);
    const pop3 = (user: string, pass: string) => pop3Login(dovecot.pop3Port, user, pass);
    const send = (user: string, pass: string, to: string, quitAfter?: 'AUTH') =>
      swaksSend({ port: postfix.submissionPort, user, pass, from: ALICE, to, ...(quitAfter ? { quitAfter } : {}) });
    const inboxCount = async (user: string) =>
      Number((await dovecot.doveadm(['-f', 'flow', 'mailbox', 'status', '-u', user, 'messages', 'INBOX'])).match(/messages=(\d+)/)?.[1]);

    beforeAll(async () => {
      if (!available) return;
      db = await createTestDatabase(dialect);
      await seed(db.url);
      hookDir = mkdtempSync(join(tmpdir(), 'mailsvc-hook-'));
      chmodSync(hookDir, 0o755);
      hook = await startStubMailHook(join(hookDir, 'auth-hook.sock'), { [ALICE]: [ALICE_PW, APP_PW], [BOB]: [APP_PW] }, { alice: ALICE });
      policy = await startStubPolicyService(1);
      dovecot = await startDovecot({ dialect, databaseUrl: db.url, hookSocket: hook.socketPath });
      postfix = await startPostfix({ dialect, databaseUrl: db.url, saslPath: dovecot.authSocket, policy: policy.address, lmtp: dovecot.lmtpSocket });
    });

    afterAll(async () => {
      await Promise.all([postfix?.stop(), dovecot?.stop(), policy?.stop(), hook?.stop()]);
      if (hookDir) rmSync(hookDir, { recursive: true, force: true });
      await db?.drop();
    });

    it.skipIf(!available)('IMAP and POP3 accept the primary and the app password through the hook, as the canonical user', async () => {
      expect(await imap(ALICE, ALICE_PW)).toMatchObject({ ok: true });
      expect(await imap('Alice@Example.ORG', APP_PW)).toMatchObject({ ok: true });
      // The hook's canonical name replaces the login name: the userdb knows only `alice@example.org`.
      expect(await imap('alice', APP_PW)).toMatchObject({ ok: true });
      expect(await pop3(ALICE, APP_PW)).toMatchObject({ ok: true });
      expect(await imap(BOB, APP_PW)).toMatchObject({ ok: true });
      expect(hook.requests).toContainEqual({ protocol: 'imap', remoteIp: '127.0.0.1', user: ALICE, password: APP_PW });
      expect(hook.requests).toContainEqual({ protocol: 'pop3', remoteIp: '127.0.0.1', user: ALICE, password: APP_PW });
    });

    it.skipIf(!available)('the SQL userdb gives each mailbox a home in the vmail tree, the vmail uid, and quota_rule when quota_bytes > 0', async () => {
      const fields = async (user: string) =>
        Object.fromEntries((await dovecot.doveadm(['user', user])).trim().split('\n').slice(1).map((l) => l.split('\t')));
      const alice = await fields(ALICE);
      expect(alice).toMatchObject({ uid: '65534', quota_rule: `*:bytes=${1 << 30}` });
      expect(alice.home).toMatch(/\/vmail\/example\.org\/alice$/);
      expect(await fields(CAROL)).not.toHaveProperty('quota_rule');
    });

    it.skipIf(!available)("the hook's refusal is final: no SQL fallback for a wrong password or a refused primary password", async () => {
      expect(await imap(ALICE, WRONG)).toMatchObject({ ok: false });
      expect(await pop3(ALICE, WRONG)).toMatchObject({ ok: false });
      expect(await imap(BOB, BOB_PW)).toMatchObject({ ok: false });
      expect(await imap(CAROL, CAROL_PW)).toMatchObject({ ok: false });
      expect(hook.requests.filter((r) => r.user === CAROL)).toHaveLength(1);
    });

    it.skipIf(!available)('SMTP AUTH on submission goes through Dovecot to the hook; mail reaches mailboxes and aliases over LMTP', async () => {
      const wrong = await send(ALICE, WRONG, BOB);
      expect(wrong.code, wrong.output).toBe('535');
      const unknown = await send(ALICE, APP_PW, 'nobody@example.org');
      expect(unknown.code, unknown.output).toBe('550');
      const sent = await send(ALICE, APP_PW, `${BOB},team@example.org`);
      expect(sent, sent.output).toMatchObject({ ok: true, code: '250' });
      expect(hook.requests).toContainEqual({ protocol: 'smtp', remoteIp: '127.0.0.1', user: ALICE, password: APP_PW });
      expect(await eventually(async () => (await inboxCount(BOB)) >= 1), postfix.logs()).toBe(true);
    });

    it.skipIf(!available)('the policy service sees each message once at end of data, with sasl_username, and its soft reject is a 4xx', async () => {
      const second = await send(ALICE, APP_PW, BOB);
      expect(second.ok).toBe(false);
      expect(second.code, second.output).toMatch(/^4\d\d$/);
      const endOfData = policy.requests.filter((r) => r.protocol_state === 'END-OF-MESSAGE');
      expect(endOfData.map((r) => r.sasl_username)).toEqual([ALICE, ALICE]);
    });

    it.skipIf(!available)('doveadm kick ends an open IMAP session', async () => {
      const session = await imapSession(dovecot.imapPort, ALICE, APP_PW);
      try {
        expect(await session.noop()).toBe(true);
        // anvil learns of the session, and the kicked process exits, a moment later.
        expect(await eventually(async () => (await dovecot.doveadm(['who'])).includes(ALICE)), dovecot.logs()).toBe(true);
        await dovecot.doveadm(['kick', ALICE]);
        expect(await eventually(async () => !(await session.noop())), dovecot.logs()).toBe(true);
      } finally {
        await session.close();
      }
    });

    it.skipIf(!available)('when the hook answers ERROR or not at all, SQL serves primary passwords only', async () => {
      hook.setMode('error');
      expect(await imap(ALICE, ALICE_PW)).toMatchObject({ ok: true });
      expect(await imap(ALICE, APP_PW)).toMatchObject({ ok: false });
      // Silence costs the Lua script's 3 s timeout per login: one is enough.
      hook.setMode('silent');
      const started = Date.now();
      expect(await imap(ALICE, ALICE_PW)).toMatchObject({ ok: true });
      expect(Date.now() - started).toBeGreaterThanOrEqual(2500);
      hook.setMode('answer');
    });

    it.skipIf(!available)('with the hook down, SQL serves primary passwords only, and not for accounts requiring app passwords', async () => {
      await hook.stop();
      expect(await imap(ALICE, ALICE_PW)).toMatchObject({ ok: true });
      expect(await pop3(ALICE, ALICE_PW)).toMatchObject({ ok: true });
      expect(await imap(ALICE, APP_PW)).toMatchObject({ ok: false });
      expect(await imap(BOB, BOB_PW)).toMatchObject({ ok: false });
      expect(await imap(ALICE, WRONG)).toMatchObject({ ok: false });
      const smtp = await send(ALICE, ALICE_PW, BOB, 'AUTH');
      expect(smtp.code, smtp.output).toBe('235');
      expect((await send(ALICE, APP_PW, BOB, 'AUTH')).code).toBe('535');
    });
  });
}
