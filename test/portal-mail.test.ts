import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chmodSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execFile } from 'node:child_process';
import { loadMailSettings } from '../src/config/mail-settings.js';
import { createTestDatabase, dialectAvailable } from './helpers/dialects.js';
import type { TestDatabase } from './helpers/dialects.js';
import { startTestApp } from './helpers/app.js';
import type { TestApp } from './helpers/app.js';
import { freePort, mailDaemonsUnavailable, startDovecot, startPostfix } from './helpers/mail-daemons.js';
import type { Dovecot, Postfix } from './helpers/mail-daemons.js';
import { skipNotice } from './helpers/services.js';
import { startHookServer } from '../src/modules/mail-auth/hook-server.js';
import { HelperRunner } from '../src/helper/runner.js';
import { startHelperServer } from '../src/helper/server.js';
import { helperConfig } from './helpers/helper-config.js';
import { portalSignIn } from './helpers/portal.js';
import type { PortalClient } from './helpers/portal.js';

// The portal's forwarding and out-of-office reply on real Dovecot (with
// Pigeonhole, configured from deploy/dovecot/conf.d/12-mailsvc-portal.conf)
// and real Postfix: the portal writes the Sieve script through the privileged
// helper's real socket (doveadm sieve put), a message enters through Postfix's
// SMTP service, Dovecot's LMTP runs the script, and replies and forwards go
// back out through Postfix. SQLite only: the Sieve path does not touch SQL.
const daemonsMissing = mailDaemonsUnavailable() ?? (await pigeonholeMissing());
if (daemonsMissing) skipNotice('Dovecot with Pigeonhole (dovecot-sieve), Postfix and swaks', daemonsMissing);

async function pigeonholeMissing(): Promise<string | null> {
  const { existsSync } = await import('node:fs');
  return existsSync('/usr/lib/dovecot/modules/lib90_sieve_plugin.so') ? null : 'missing dovecot-sieve (lib90_sieve_plugin.so)';
}

const ALICE = 'alice@example.org';
const BOB = 'bob@example.org';
const CAROL = 'carol@example.org';
const DAVE = 'dave@example.org';
const PW = 'mailbox-password-1';

/** An unauthenticated message, as from outside, through Postfix's port-25-like service. */
function sendFromOutside(port: number, from: string, to: string, subject: string): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile('swaks', ['--server', `127.0.0.1:${port}`, '--from', from, '--to', to, '--header', `Subject: ${subject}`, '--timeout', '15'], { timeout: 30_000 }, (err, stdout, stderr) =>
      err ? reject(new Error(`${stdout}${stderr}`)) : resolve(stdout));
  });
}

describe('portal forwarding and out-of-office reply on real Dovecot (Pigeonhole) and Postfix', { timeout: 180_000 }, async () => {
  const available = (await dialectAvailable('sqlite')) && daemonsMissing === null;
  let db: TestDatabase;
  let t: TestApp;
  let dovecot: Dovecot;
  let postfix: Postfix;
  let closeHook: () => Promise<void> = async () => undefined;
  let closeHelper: () => Promise<void> = async () => undefined;
  let alice: PortalClient;

  /** The subjects in a mailbox's INBOX, as Dovecot has them. */
  async function subjects(user: string): Promise<string[]> {
    const out = await dovecot.doveadm(['-f', 'tab', 'fetch', '-u', user, 'hdr.subject', 'mailbox', 'INBOX', 'all']);
    return out.split('\n').slice(1).map((l) => l.trim()).filter(Boolean);
  }
  /** Waits (up to 30 s) until the mailbox holds a message whose subject matches. */
  async function arrives(user: string, pattern: RegExp): Promise<string[]> {
    const end = Date.now() + 30_000;
    for (;;) {
      const got = await subjects(user);
      if (got.some((s) => pattern.test(s))) return got;
      if (Date.now() > end) throw new Error(`nothing matching ${String(pattern)} reached ${user}: ${JSON.stringify(got)}\n${postfix.logs().slice(-3000)}\n${dovecot.logs().slice(-3000)}`);
      await new Promise((r) => setTimeout(r, 200));
    }
  }

  beforeAll(async () => {
    if (!available) return;
    db = await createTestDatabase('sqlite');
    const sockDir = mkdtempSync(join(tmpdir(), 'mailsvc-run-'));
    chmodSync(sockDir, 0o755);
    const helperSocket = join(sockDir, 'helper.sock');
    t = await startTestApp(db.url, { MAILSVC_MFA_REQUIRED: 'no', MAILSVC_ENABLE_USER_PORTAL: 'yes', MAILSVC_HELPER: `unix:${helperSocket}` });
    await t.ctx.domains.create('example.org');
    for (const a of [ALICE, BOB, CAROL, DAVE]) await t.ctx.accounts.create({ address: a, password: PW });
    const hookSocket = join(sockDir, 'auth-hook.sock');
    const group = loadMailSettings({ MAILSVC_MAIL_AUTH_SOCKET_GROUP: 'dovecot' }, t.dataDir).authHookSocketGroup;
    closeHook = (await startHookServer({ socketPath: hookSocket, socketGroup: group }, t.ctx.mailAuth, t.ctx.log)).close;
    const smtpPort = await freePort();
    dovecot = await startDovecot({
      dialect: 'sqlite', databaseUrl: db.url, hookSocket,
      confD: ['12-mailsvc-portal.conf'],
      // Replies and redirects leave through Postfix's SMTP service (on a host: /usr/sbin/sendmail, Postfix's own).
      extra: `submission_host = 127.0.0.1:${smtpPort}`,
    });
    postfix = await startPostfix({ dialect: 'sqlite', databaseUrl: db.url, saslPath: dovecot.authSocket, lmtp: dovecot.lmtpSocket, smtp: true, smtpPort });
    const cfg = helperConfig({ doveadm: 'doveadm', dovecotConfig: dovecot.configPath, postfixConfigDir: postfix.configDir, fail2banSocket: '/nonexistent', fail2banConfigDir: '/etc/fail2ban' });
    closeHelper = (await startHelperServer({ path: helperSocket, group: null }, new HelperRunner(cfg, t.ctx.log), t.ctx.log)).close;
    alice = await portalSignIn(t.app, ALICE, PW);
  }, 180_000);
  afterAll(async () => {
    await postfix?.stop();
    await dovecot?.stop();
    await closeHelper();
    await closeHook();
    await t?.close();
    await db?.drop();
  });

  it.skipIf(!available)('forwarding with a copy: the message reaches the target and stays in the mailbox', async () => {
    const r = await alice.call('PUT', 'forwarding', { to: BOB, keep_copy: true });
    expect(r.statusCode, r.body).toBe(200);
    expect(await dovecot.doveadm(['sieve', 'list', '-u', ALICE])).toMatch(/mailsvc-portal\s+ACTIVE/);
    await sendFromOutside(postfix.smtpPort, DAVE, ALICE, 'fwd-copy-1');
    await arrives(BOB, /fwd-copy-1/);
    expect(await arrives(ALICE, /fwd-copy-1/)).toContain('fwd-copy-1');
  });

  it.skipIf(!available)('forwarding without a copy: the target gets it, the mailbox does not; cleared, mail stays again', async () => {
    expect((await alice.call('PUT', 'forwarding', { to: BOB, keep_copy: false })).statusCode).toBe(200);
    await sendFromOutside(postfix.smtpPort, DAVE, ALICE, 'fwd-move-2');
    await arrives(BOB, /fwd-move-2/);
    // LMTP ran the script for Alice before the redirect reached Bob: her mailbox is final now.
    expect(await subjects(ALICE)).not.toContain('fwd-move-2');
    expect((await alice.call('PUT', 'forwarding', { to: null, keep_copy: true })).statusCode).toBe(200);
    await sendFromOutside(postfix.smtpPort, DAVE, ALICE, 'no-fwd-3');
    await arrives(ALICE, /no-fwd-3/);
    expect(await subjects(BOB)).not.toContain('no-fwd-3');
  });

  it.skipIf(!available)('the out-of-office reply goes once per sender per period, and to each sender', async () => {
    // The dates are optional (docs/portal.md): left out, the reply runs from now until switched off.
    const r = await alice.call('PUT', 'vacation', { enabled: true, subject: 'Away until Monday', body: 'I am away.\nBack on Monday.', days: 7 });
    expect(r.statusCode, r.body).toBe(200);
    expect(JSON.parse(r.body)).toMatchObject({ enabled: true, start: null, end: null });
    await sendFromOutside(postfix.smtpPort, CAROL, ALICE, 'vac-1');
    await arrives(CAROL, /Away until Monday/);
    await sendFromOutside(postfix.smtpPort, CAROL, ALICE, 'vac-2');
    await arrives(ALICE, /vac-2/);
    // Dave's first message gets its reply; by the time it is in, Carol's second would have had one too.
    await sendFromOutside(postfix.smtpPort, DAVE, ALICE, 'vac-3');
    await arrives(DAVE, /Away until Monday/);
    expect((await subjects(CAROL)).filter((s) => /Away until Monday/.test(s))).toHaveLength(1);
  });

  it.skipIf(!available)('a reply whose dates are over sends nothing; switched off, nothing either', async () => {
    expect((await alice.call('PUT', 'vacation', { enabled: true, subject: 'Old trip', body: 'Gone.', start: '2020-01-01', end: '2020-01-31', days: 1 })).statusCode).toBe(200);
    await sendFromOutside(postfix.smtpPort, BOB, ALICE, 'vac-past-4');
    await arrives(ALICE, /vac-past-4/);
    expect((await alice.call('PUT', 'vacation', { enabled: false, subject: '', body: '', start: null, end: null, days: 7 })).statusCode).toBe(200);
    await sendFromOutside(postfix.smtpPort, BOB, ALICE, 'vac-off-5');
    await arrives(ALICE, /vac-off-5/);
    // Both are in Alice's mailbox, so LMTP ran the script on both: no reply reached Bob.
    await sendFromOutside(postfix.smtpPort, DAVE, BOB, 'marker-6');
    await arrives(BOB, /marker-6/);
    expect(await subjects(BOB)).not.toContain('Old trip');
  });

  it.skipIf(!available)('usage comes from doveadm quota get: the messages delivered are counted', async () => {
    const r = await alice.call('GET', 'usage');
    expect(r.statusCode, r.body).toBe(200);
    const u = r.json<{ messages: number; storage_bytes: number }>();
    expect(u.messages).toBe((await subjects(ALICE)).length);
    expect(u.storage_bytes).toBeGreaterThan(0);
  });
});
