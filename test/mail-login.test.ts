import { helperConfig } from './helpers/helper-config.js';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { chmodSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadMailSettings } from '../src/config/mail-settings.js';
import { DIALECTS, createTestDatabase, dialectAvailable } from './helpers/dialects.js';
import type { TestDatabase } from './helpers/dialects.js';
import { startTestApp } from './helpers/app.js';
import type { TestApp } from './helpers/app.js';
import { mailDaemonsUnavailable, startDovecot, startPostfix } from './helpers/mail-daemons.js';
import type { Dovecot, Postfix } from './helpers/mail-daemons.js';
import { imapLogin, imapSession, pop3Login, swaksSend } from './helpers/mail-clients.js';
import { skipNotice } from './helpers/services.js';
import { startHookServer } from '../src/modules/mail-auth/hook-server.js';
import { startPolicyServer } from '../src/modules/send-limits/policy-server.js';
import { DoveadmKicker } from '../src/adapters/dovecot/doveadm.js';
import type { MailSessionKicker } from '../src/adapters/dovecot/doveadm.js';
import { HelperRunner } from '../src/helper/runner.js';
import { startHelperServer } from '../src/helper/server.js';
import { SocketHelperClient } from '../src/helper/socket-client.js';

// mailsvc as `serve` runs it (hook socket, policy service, doveadm kick through
// the privileged helper's real socket), with
// Dovecot and Postfix started from deploy/ in a temp dir, and clients nobody
// here wrote: python3's imaplib/poplib and swaks.
const daemonsMissing = mailDaemonsUnavailable();
if (daemonsMissing) skipNotice('Dovecot, Postfix and swaks', daemonsMissing);

const ALICE = 'alice@example.org';
const BOB = 'bob@example.org';
const CAROL = 'carol@example.org';
const PW = { alice: 'alice-primary-pw', bob: 'bob-primary-pw1', carol: 'carol-primary-pw' };
const PER_MINUTE = 3;

/** doveadm kick reaches the session a moment after it returns: poll up to 20 s (a busy 2-core machine; it returns as soon as it is dropped). */
async function droppedSoon(session: { noop(): Promise<boolean> }): Promise<boolean> {
  const end = Date.now() + 20_000;
  while (Date.now() < end) {
    if (!(await session.noop())) return true;
    await new Promise((r) => setTimeout(r, 100));
  }
  return !(await session.noop());
}

for (const dialect of DIALECTS) {
  describe(`mail login through mailsvc on real Dovecot and Postfix (${dialect})`, { timeout: 120_000 }, async () => {
    const available = (await dialectAvailable(dialect)) && daemonsMissing === null;
    let db: TestDatabase;
    let t: TestApp;
    let dovecot: Dovecot;
    let postfix: Postfix;
    let closeHook: () => Promise<void> = async () => undefined;
    let closePolicy: () => Promise<void> = async () => undefined;
    let closeHelper: () => Promise<void> = async () => undefined;
    let helper: SocketHelperClient;
    let appPw = '';
    let appPwId = '';
    let hookSocket = '';
    const kicker: { real: MailSessionKicker | null } = { real: null };

    beforeAll(async () => {
      if (!available) return;
      db = await createTestDatabase(dialect);
      t = await startTestApp(db.url, { MAILSVC_MFA_REQUIRED: 'no' }, {
        kicker: { kick: (user) => (kicker.real ? kicker.real.kick(user) : Promise.resolve({ kicked: false, detail: 'no dovecot yet' })) },
      });
      await t.ctx.domains.create('example.org');
      await t.ctx.accounts.create({ address: ALICE, password: PW.alice, send_rate_per_minute: PER_MINUTE });
      await t.ctx.accounts.create({ address: BOB, password: PW.bob, require_app_password: true });
      await t.ctx.accounts.create({ address: CAROL, password: PW.carol });
      const app = await t.ctx.appPasswords.create(ALICE, { name: 'mail client' });
      appPw = app.password;
      appPwId = app.id;
      // As deployed: a directory Dovecot may enter, the socket 0660 with Dovecot's group.
      const sockDir = mkdtempSync(join(tmpdir(), 'mailsvc-run-'));
      chmodSync(sockDir, 0o755);
      hookSocket = join(sockDir, 'auth-hook.sock');
      const group = loadMailSettings({ MAILSVC_MAIL_AUTH_SOCKET_GROUP: 'dovecot' }, t.dataDir).authHookSocketGroup;
      closeHook = (await startHookServer({ socketPath: hookSocket, socketGroup: group }, t.ctx.mailAuth, t.ctx.log)).close;
      const policy = await startPolicyServer({ host: '127.0.0.1', port: 0 }, t.ctx.sendLimits, t.ctx.sendCounter, t.ctx.log);
      closePolicy = policy.close;
      dovecot = await startDovecot({ dialect, databaseUrl: db.url, hookSocket });
      postfix = await startPostfix({ dialect, databaseUrl: db.url, saslPath: dovecot.authSocket, policy: `inet:127.0.0.1:${policy.port}`, lmtp: dovecot.lmtpSocket });
      const helperCfg = helperConfig({ doveadm: 'doveadm', dovecotConfig: dovecot.configPath, postfixConfigDir: postfix.configDir, fail2banSocket: '/nonexistent', fail2banConfigDir: '/etc/fail2ban' });
      const helperSocket = join(sockDir, 'helper.sock');
      closeHelper = (await startHelperServer({ path: helperSocket, group: null }, new HelperRunner(helperCfg, t.ctx.log), t.ctx.log)).close;
      helper = new SocketHelperClient(helperSocket);
      kicker.real = new DoveadmKicker(helper);
    }, 120_000);
    afterAll(async () => {
      await postfix?.stop();
      await dovecot?.stop();
      await closePolicy();
      await closeHelper();
      await closeHook();
      await t?.close();
      await db?.drop();
    });

    it.skipIf(!available)('IMAP and POP3 accept the primary password and the app password; a wrong one is refused', async () => {
      expect((await imapLogin(dovecot.imapPort, ALICE, PW.alice)).ok).toBe(true);
      expect((await imapLogin(dovecot.imapPort, ALICE, appPw)).ok).toBe(true);
      expect((await pop3Login(dovecot.pop3Port, ALICE, PW.alice)).ok).toBe(true);
      expect((await pop3Login(dovecot.pop3Port, ALICE, appPw)).ok).toBe(true);
      expect((await imapLogin(dovecot.imapPort, ALICE, 'not-the-password')).ok).toBe(false);
      const [listed] = await t.ctx.appPasswords.list(ALICE);
      expect(listed?.last_used_at).not.toBeNull();
      expect(listed?.last_used_ip).toBe('127.0.0.1');
    });

    it.skipIf(!available)('require_app_password refuses the primary password; an app password of that account works', async () => {
      expect((await imapLogin(dovecot.imapPort, BOB, PW.bob)).ok).toBe(false);
      const bobApp = await t.ctx.appPasswords.create(BOB, { name: 'phone' });
      expect((await imapLogin(dovecot.imapPort, BOB, bobApp.password)).ok).toBe(true);
      expect((await pop3Login(dovecot.pop3Port, BOB, bobApp.password)).ok).toBe(true);
    });

    it.skipIf(!available)('SMTP AUTH through Postfix and Dovecot SASL: the app password is accepted, a wrong one is refused', async () => {
      const ok = await swaksSend({ port: postfix.submissionPort, user: ALICE, pass: appPw, from: ALICE, to: CAROL, quitAfter: 'AUTH' });
      expect(ok.code, ok.output).toBe('235');
      const bad = await swaksSend({ port: postfix.submissionPort, user: ALICE, pass: 'wrong-wrong-wrong', from: ALICE, to: CAROL, quitAfter: 'AUTH' });
      expect(bad.ok).toBe(false);
      expect(bad.code).toBe('535');
    });

    it.skipIf(!available)(`send_rate_per_minute ${PER_MINUTE}: message ${PER_MINUTE + 1} is deferred with a 4xx, another account still sends`, async () => {
      const codes: string[] = [];
      for (let i = 0; i <= PER_MINUTE; i += 1) {
        const r = await swaksSend({ port: postfix.submissionPort, user: ALICE, pass: appPw, from: ALICE, to: CAROL });
        codes.push(r.code);
      }
      expect(codes.slice(0, PER_MINUTE)).toEqual(Array(PER_MINUTE).fill('250'));
      expect(codes[PER_MINUTE]).toMatch(/^4\d\d$/);
      const carol = await swaksSend({ port: postfix.submissionPort, user: CAROL, pass: PW.carol, from: CAROL, to: ALICE });
      expect(carol.code, carol.output).toBe('250');
    });

    it.skipIf(!available)('revoking an app password refuses it and drops the open IMAP session', async () => {
      const session = await imapSession(dovecot.imapPort, ALICE, appPw);
      expect(await session.noop()).toBe(true);
      const r = await t.app.inject({ method: 'DELETE', url: `/accounts/${ALICE}/app-passwords/${appPwId}`, headers: { authorization: t.basic() } });
      expect(r.statusCode).toBe(204);
      expect(await droppedSoon(session)).toBe(true);
      // The kick went through the helper, which logged it with doveadm's accepted exit code.
      const call = t.logs.map((l) => JSON.parse(l) as { helper?: { action: string; args: string[]; ok: boolean; code: number } }).find((l) => l.helper?.action === 'doveadm-kick');
      expect(call?.helper).toMatchObject({ args: [ALICE], ok: true, code: 0 });
      await session.close();
      expect((await imapLogin(dovecot.imapPort, ALICE, appPw)).ok).toBe(false);
    });

    it.skipIf(!available)('the helper reloads the real Dovecot and Postfix (-c <their config>); logins keep working', async () => {
      expect((await helper.run('reload', ['dovecot'])).code).toBe(0);
      expect((await helper.run('reload', ['postfix'])).code).toBe(0);
      // The daemons log the reload a moment after the signal: wait for the lines, not a fixed time.
      await vi.waitFor(() => {
        expect(dovecot.logs()).toMatch(/SIGHUP received - reloading configuration/);
        expect(postfix.logs()).toMatch(/refreshing the Postfix mail system/);
      }, { timeout: 30_000, interval: 100 });
      expect((await imapLogin(dovecot.imapPort, ALICE, PW.alice)).ok).toBe(true);
      const sent = await swaksSend({ port: postfix.submissionPort, user: ALICE, pass: PW.alice, from: ALICE, to: CAROL, quitAfter: 'AUTH' });
      expect(sent.code, sent.output).toBe('235');
    });

    it.skipIf(!available)('a new primary password and a deactivation end the open sessions and refuse the old password', async () => {
      const session = await imapSession(dovecot.imapPort, CAROL, PW.carol);
      await t.app.inject({ method: 'PATCH', url: `/accounts/${CAROL}`, headers: { authorization: t.basic() }, payload: { password: 'carol-new-password' } });
      expect(await droppedSoon(session)).toBe(true);
      await session.close();
      expect((await imapLogin(dovecot.imapPort, CAROL, PW.carol)).ok).toBe(false);
      expect((await imapLogin(dovecot.imapPort, CAROL, 'carol-new-password')).ok).toBe(true);
      const second = await imapSession(dovecot.imapPort, CAROL, 'carol-new-password');
      await t.app.inject({ method: 'PATCH', url: `/accounts/${CAROL}`, headers: { authorization: t.basic() }, payload: { active: false } });
      expect(await droppedSoon(second)).toBe(true);
      await second.close();
      expect((await imapLogin(dovecot.imapPort, CAROL, 'carol-new-password')).ok).toBe(false);
    });

    it.skipIf(!available)('with mailsvc stopped, the primary password still logs in (SQL fallback); app passwords do not', async () => {
      const bobApp = await t.ctx.appPasswords.create(ALICE, { name: 'another client' });
      expect((await imapLogin(dovecot.imapPort, ALICE, bobApp.password)).ok).toBe(true);
      await closeHook();
      closeHook = async () => undefined;
      expect((await imapLogin(dovecot.imapPort, ALICE, PW.alice)).ok).toBe(true);
      expect((await pop3Login(dovecot.pop3Port, ALICE, PW.alice)).ok).toBe(true);
      expect((await imapLogin(dovecot.imapPort, ALICE, bobApp.password)).ok).toBe(false);
      // The fallback keeps require_app_password and deactivation.
      expect((await imapLogin(dovecot.imapPort, BOB, PW.bob)).ok).toBe(false);
      expect((await imapLogin(dovecot.imapPort, CAROL, 'carol-new-password')).ok).toBe(false);
      const smtp = await swaksSend({ port: postfix.submissionPort, user: ALICE, pass: PW.alice, from: ALICE, to: BOB, quitAfter: 'AUTH' });
      expect(smtp.code).toBe('235');
    });
  });
}
