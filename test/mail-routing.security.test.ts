import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createDb } from '../src/db/database.js';
import { migrateToLatest } from '../src/app/schema.js';
import { DIALECTS, createTestDatabase, dialectAvailable } from './helpers/dialects.js';
import type { TestDatabase } from './helpers/dialects.js';
import { skipNotice } from './helpers/services.js';
import { mailDaemonsUnavailable, startDovecot, startPostfix } from './helpers/mail-daemons.js';
import type { Dovecot, Postfix } from './helpers/mail-daemons.js';
import { swaksSend } from './helpers/mail-clients.js';
import { startStubMailHook } from './helpers/stub-mail-hook.js';
import type { StubMailHook } from './helpers/stub-mail-hook.js';

/**
 * Mail routing through the real Postfix and Dovecot from deploy/, on each
 * dialect: a catch-all alias does not take the domain's own mailboxes' mail,
 * and an authenticated user may send only as an address their login owns.
 */

const ALICE = 'alice@example.org';
const BOB = 'bob@example.org';
const CAROL = 'carol@example.org';
const PW = 'app1.secretsecret';

const unavailable = mailDaemonsUnavailable();
if (unavailable !== null) skipNotice('Dovecot, Postfix and swaks', unavailable);

async function eventually(check: () => Promise<boolean>, ms = 5000): Promise<boolean> {
  for (const deadline = Date.now() + ms; Date.now() < deadline; await new Promise((r) => setTimeout(r, 100))) {
    if (await check()) return true;
  }
  return false;
}

/** Alice, Bob and Carol have mailboxes; `@example.org` catches the rest for Carol; `sales@` delivers to Alice and Bob; `old@` (inactive) to Alice. */
async function seed(url: string): Promise<void> {
  const db = createDb(url);
  try {
    await migrateToLatest(db);
    const now = Date.now();
    await db.insertInto('domains').values({ name: 'example.org', active: 1, created_at: now, updated_at: now }).execute();
    const { id } = await db.selectFrom('domains').select('id').where('name', '=', 'example.org').executeTakeFirstOrThrow();
    const noLimits = { send_rate_burst: 0, send_rate_per_minute: 0, send_rate_per_hour: 0, send_rate_per_day: 0, send_rate_per_week: 0, send_rate_per_month: 0 };
    const account = (address: string) => ({
      domain_id: id, local_part: address.split('@')[0] ?? '', address, display_name: '', password_hash: '{ARGON2ID}unused',
      require_app_password: 1, quota_bytes: 0, active: 1, ...noLimits, created_at: now, updated_at: now,
    });
    await db.insertInto('accounts').values([account(ALICE), account(BOB), account(CAROL)]).execute();
    const alias = (source: string, destination: string) => ({ domain_id: id, source, destination, active: 1, created_at: now, updated_at: now });
    await db.insertInto('aliases').values([alias('@example.org', CAROL), alias('sales@example.org', `${ALICE},${BOB}`), { ...alias('old@example.org', ALICE), active: 0 }]).execute();
  } finally {
    await db.destroy();
  }
}

for (const dialect of DIALECTS) {
  describe(`mail routing through Postfix from deploy/ (${dialect})`, async () => {
    const available = unavailable === null && (await dialectAvailable(dialect));
    let db: TestDatabase;
    let hookDir: string;
    let hook: StubMailHook;
    let dovecot: Dovecot;
    let postfix: Postfix;
    const send = (user: string, from: string, to: string) => swaksSend({ port: postfix.submissionPort, user, pass: PW, from, to });
    const inbox = async (user: string) =>
      Number((await dovecot.doveadm(['-f', 'flow', 'mailbox', 'status', '-u', user, 'messages', 'INBOX'])).match(/messages=(\d+)/)?.[1] ?? 0);
    const inboxes = async () => ({ alice: await inbox(ALICE), bob: await inbox(BOB), carol: await inbox(CAROL) });

    beforeAll(async () => {
      if (!available) return;
      db = await createTestDatabase(dialect);
      await seed(db.url);
      hookDir = mkdtempSync(join(tmpdir(), 'mailsvc-hook-'));
      chmodSync(hookDir, 0o755);
      hook = await startStubMailHook(join(hookDir, 'auth-hook.sock'), { [ALICE]: [PW], [BOB]: [PW], [CAROL]: [PW] }, { alice: ALICE });
      dovecot = await startDovecot({ dialect, databaseUrl: db.url, hookSocket: hook.socketPath });
      postfix = await startPostfix({ dialect, databaseUrl: db.url, saslPath: dovecot.authSocket, lmtp: dovecot.lmtpSocket });
    });

    afterAll(async () => {
      await Promise.all([postfix?.stop(), dovecot?.stop(), hook?.stop()]);
      if (hookDir) rmSync(hookDir, { recursive: true, force: true });
      await db?.drop();
    });

    it.skipIf(!available)("a catch-all alias takes only the addresses no mailbox or alias has: a mailbox's mail reaches the mailbox", async () => {
      const sent = await send(BOB, BOB, `${ALICE},nobody@example.org`);
      expect(sent, sent.output).toMatchObject({ ok: true, code: '250' });
      // Alice's copy reaches Alice; only nobody@'s copy reaches Carol through the catch-all.
      expect(await eventually(async () => (await inboxes()).alice === 1 && (await inboxes()).carol === 1), postfix.logs()).toBe(true);
      expect(await inboxes()).toEqual({ alice: 1, bob: 0, carol: 1 });
      expect(postfix.logs()).not.toMatch(/to=<carol@example\.org>, orig_to=<alice@example\.org>/);
    });

    it.skipIf(!available)('an authenticated user sends as their own address and as an alias that delivers to them', async () => {
      const own = await send(ALICE, ALICE, BOB);
      expect(own, own.output).toMatchObject({ ok: true, code: '250' });
      const alias = await send(BOB, 'sales@example.org', ALICE);
      expect(alias, alias.output).toMatchObject({ ok: true, code: '250' });
      // Addresses compare without regard to case, as mail addresses do.
      const upper = await send(ALICE, 'Alice@Example.ORG', BOB);
      expect(upper, upper.output).toMatchObject({ ok: true, code: '250' });
      // A login name the hook maps to the account: Postfix checks the canonical name Dovecot returns.
      const short = await send('alice', ALICE, BOB);
      expect(short, short.output).toMatchObject({ ok: true, code: '250' });
    });

    it.skipIf(!available)("someone else's address, one nobody owns, or an inactive alias's, is refused with 5.7.1", async () => {
      for (const from of [BOB, 'postmaster@elsewhere.test', 'old@example.org']) {
        const r = await send(ALICE, from, CAROL);
        expect(r.ok, r.output).toBe(false);
        expect(r.code, r.output).toBe('553');
        expect(r.output).toMatch(/5\.7\.1 .*not owned by user alice@example\.org/);
      }
    });
  });
}
