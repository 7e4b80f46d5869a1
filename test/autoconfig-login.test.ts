import { execFile } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase } from './helpers/dialects.js';
import type { TestDatabase } from './helpers/dialects.js';
import { startTestApp } from './helpers/app.js';
import type { TestApp } from './helpers/app.js';
import { mailDaemonsUnavailable, startDovecot, startPostfix } from './helpers/mail-daemons.js';
import type { Dovecot, Postfix } from './helpers/mail-daemons.js';
import { makeTestCa } from './helpers/test-ca.js';
import type { TestCa } from './helpers/test-ca.js';
import { skipNotice } from './helpers/services.js';
import { autodiscoverProtocols, parsePlist, thunderbirdServers } from './helpers/autoconfig.js';
import { loadMailSettings } from '../src/config/mail-settings.js';
import { startHookServer } from '../src/modules/mail-auth/hook-server.js';

/**
 * A mail client configured only by mailsvc's answers: real Dovecot (TLS,
 * listeners from deploy/dovecot/conf.d/13-mailsvc-listeners.conf) and real
 * Postfix (TLS, submission services from deploy/postfix/master.cf.submission),
 * each on free ports, and mailsvc reading those very files. Every server an
 * answer names is used exactly as named (port, implicit TLS or STARTTLS, the
 * certificate checked against the host name given, the login name) by
 * Python's imaplib and smtplib, signing in through mailsvc's auth hook.
 * Only the address is mapped: the host name resolves to 127.0.0.1 here.
 */
const daemonsMissing = mailDaemonsUnavailable();
if (daemonsMissing) skipNotice('Dovecot, Postfix and python3', daemonsMissing);

const execFileP = promisify(execFile);
const PYTHON = existsSync('/usr/bin/python3') ? '/usr/bin/python3' : 'python3';
const HOST = 'mail.example.org';
const ALICE = 'alice@example.org';
const CAROL = 'carol@example.org';
const PW = 'alice-primary-pw';

/** One server as an answer names it. */
type Server = { kind: 'imap' | 'smtp'; host: string; port: number; security: 'SSL' | 'STARTTLS'; user: string };

const CLIENT = `
import imaplib, json, smtplib, socket, ssl, sys
a = json.load(sys.stdin)
ctx = ssl.create_default_context(cafile=a['ca'])
def connect(port, timeout):
    # The answer's host name is checked against the certificate; only the address is 127.0.0.1.
    return socket.create_connection(('127.0.0.1', port), timeout or 15)
class Imap(imaplib.IMAP4):
    def _create_socket(self, timeout):
        return connect(self.port, timeout)
class ImapTls(imaplib.IMAP4_SSL):
    def _create_socket(self, timeout):
        return self.ssl_context.wrap_socket(connect(self.port, timeout), server_hostname=self.host)
class Smtp(smtplib.SMTP):
    def _get_socket(self, host, port, timeout):
        return connect(port, timeout)
class SmtpTls(smtplib.SMTP_SSL):
    def _get_socket(self, host, port, timeout):
        return self.context.wrap_socket(connect(port, timeout), server_hostname=self._host)
try:
    if a['kind'] == 'imap':
        if a['security'] == 'SSL':
            c = ImapTls(a['host'], a['port'], ssl_context=ctx, timeout=15)
        else:
            c = Imap(a['host'], a['port'], timeout=15)
            c.starttls(ssl_context=ctx)
        tls = c.sock.version()
        c.login(a['user'], a['password'])
        c.select('INBOX')
        c.logout()
    else:
        if a['security'] == 'SSL':
            c = SmtpTls(a['host'], a['port'], context=ctx, timeout=15)
        else:
            c = Smtp(a['host'], a['port'], timeout=15)
            c.ehlo()
            c.starttls(context=ctx)
        tls = c.sock.version()
        c.login(a['user'], a['password'])
        refused = c.sendmail(a['user'], [a['to']], 'From: %s\\r\\nTo: %s\\r\\nSubject: configured by autoconfig\\r\\n\\r\\nhello\\r\\n' % (a['user'], a['to']))
        c.quit()
        if refused:
            raise Exception('refused %r' % refused)
    print('OK ' + tls)
except (imaplib.IMAP4.error, smtplib.SMTPException, ssl.SSLError, OSError) as e:
    print('FAIL %s: %s' % (type(e).__name__, e))
`;

async function useServer(s: Server, password: string, ca: string): Promise<string> {
  const child = execFileP(PYTHON, ['-c', CLIENT], { timeout: 60_000 });
  child.child.stdin?.end(JSON.stringify({ ...s, password, ca, to: CAROL }));
  return (await child).stdout.trim();
}

const asSecurity = (v: string): 'SSL' | 'STARTTLS' => {
  if (v !== 'SSL' && v !== 'STARTTLS') throw new Error(`unexpected security ${v}`);
  return v;
};

describe('a mail client configured by the autoconfiguration answers, on real Dovecot and Postfix with TLS', { timeout: 240_000 }, () => {
  const available = daemonsMissing === null;
  let db: TestDatabase;
  let t: TestApp;
  let answers: TestApp;
  let dovecot: Dovecot;
  let postfix: Postfix;
  let ca: TestCa;
  let caFile = '';
  let closeHook: () => Promise<void> = async () => undefined;
  let sockDir = '';

  beforeAll(async () => {
    if (!available) return;
    db = await createTestDatabase('sqlite');
    t = await startTestApp(db.url, { MAILSVC_MFA_REQUIRED: 'no' });
    await t.ctx.domains.create('example.org');
    await t.ctx.accounts.create({ address: ALICE, password: PW });
    await t.ctx.accounts.create({ address: CAROL, password: 'carol-primary-pw' });
    sockDir = mkdtempSync(join(tmpdir(), 'mailsvc-run-'));
    chmodSync(sockDir, 0o755);
    const hookSocket = join(sockDir, 'auth-hook.sock');
    const group = loadMailSettings({ MAILSVC_MAIL_AUTH_SOCKET_GROUP: 'dovecot' }, t.dataDir).authHookSocketGroup;
    closeHook = (await startHookServer({ socketPath: hookSocket, socketGroup: group }, t.ctx.mailAuth, t.ctx.log)).close;
    ca = makeTestCa([HOST]);
    caFile = join(ca.dir, 'ca.pem');
    dovecot = await startDovecot({ dialect: 'sqlite', databaseUrl: db.url, hookSocket, tls: { cert: join(ca.dir, 'server.pem'), key: join(ca.dir, 'server.key') } });
    postfix = await startPostfix({ dialect: 'sqlite', databaseUrl: db.url, saslPath: dovecot.authSocket, lmtp: dovecot.lmtpSocket, tls: { key: join(ca.dir, 'server.key'), chain: ca.chain } });
    // mailsvc reading the very files the daemons run from.
    answers = await startTestApp(db.url, {
      MAILSVC_MFA_REQUIRED: 'no',
      MAILSVC_MAIL_HOST: HOST,
      MAILSVC_POSTFIX_MASTER_CF: postfix.masterCf,
      MAILSVC_DOVECOT_LISTENERS_CONF: dovecot.listenersPath,
    });
  }, 180_000);
  afterAll(async () => {
    await postfix?.stop();
    await dovecot?.stop();
    await closeHook();
    await answers?.close();
    await t?.close();
    await db?.drop();
    ca?.cleanup();
    if (sockDir) rmSync(sockDir, { recursive: true, force: true });
  });

  it.skipIf(!available)('Thunderbird\'s answer: every IMAP and SMTP server it names takes the login (implicit TLS and STARTTLS, certificate checked), and a wrong password is refused there', async () => {
    const r = await answers.app.inject({ method: 'GET', url: `/mail/config-v1.1.xml?emailaddress=${encodeURIComponent(ALICE)}` });
    expect(r.statusCode).toBe(200);
    const { incoming, outgoing } = thunderbirdServers(r.body);
    // The daemons' own ports, not the usual ones: read from their files.
    expect(incoming.map((s) => [s.port, s.socketType])).toEqual([[dovecot.imapsPort, 'SSL'], [dovecot.imapPort, 'STARTTLS']]);
    expect(outgoing.map((s) => [s.port, s.socketType])).toEqual([[postfix.submissionsPort, 'SSL'], [postfix.submissionPort, 'STARTTLS']]);
    const servers: Server[] = [...incoming, ...outgoing].map((s) => ({
      kind: s.type === 'smtp' ? 'smtp' : 'imap',
      host: s.hostname,
      port: s.port,
      security: asSecurity(s.socketType),
      user: s.username.replace('%EMAILADDRESS%', ALICE),
    }));
    for (const s of servers) {
      expect(await useServer(s, PW, caFile), `${s.kind} ${s.port} ${s.security}\n${dovecot.logs()}\n${postfix.logs()}`).toMatch(/^OK TLSv1\.[23]$/);
      expect(await useServer(s, 'not-the-password', caFile)).toMatch(/^FAIL /);
    }
    // And the certificate is really checked: the same server under another name fails.
    expect(await useServer({ ...servers[0]!, host: 'other.example.org' }, PW, caFile)).toMatch(/^FAIL .*(certificate|hostname|match)/i);
  });

  it.skipIf(!available)('Outlook\'s answer: the first IMAP and the first SMTP protocol take the login with its LoginName', async () => {
    const body = `<?xml version="1.0" encoding="utf-8"?><Autodiscover xmlns="http://schemas.microsoft.com/exchange/autodiscover/outlook/requestschema/2006"><Request><EMailAddress>${ALICE}</EMailAddress><AcceptableResponseSchema>http://schemas.microsoft.com/exchange/autodiscover/outlook/responseschema/2006a</AcceptableResponseSchema></Request></Autodiscover>`;
    const r = await answers.app.inject({ method: 'POST', url: '/autodiscover/autodiscover.xml', headers: { 'content-type': 'text/xml' }, payload: body });
    expect(r.statusCode).toBe(200);
    const protocols = autodiscoverProtocols(r.body);
    for (const type of ['IMAP', 'SMTP'] as const) {
      const p = protocols.find((x) => x.Type === type);
      expect(p).toBeDefined();
      const s: Server = { kind: type === 'IMAP' ? 'imap' : 'smtp', host: String(p?.Server), port: Number(p?.Port), security: p?.Encryption === 'SSL' ? 'SSL' : 'STARTTLS', user: String(p?.LoginName) };
      expect(await useServer(s, PW, caFile)).toMatch(/^OK /);
    }
  });

  it.skipIf(!available)('the Apple profile with a fresh app password: its IMAP and SMTP settings and the password inside sign in', async () => {
    const r = await answers.app.inject({ method: 'POST', url: `/accounts/${encodeURIComponent(ALICE)}/mobileconfig`, headers: { authorization: answers.basic() }, payload: { app_password: { name: 'iPad' } } });
    expect(r.statusCode).toBe(200);
    const [mail] = (await parsePlist(r.body)).PayloadContent as Array<Record<string, string | number | boolean>>;
    const password = String(mail?.IncomingPassword);
    const imap: Server = { kind: 'imap', host: String(mail?.IncomingMailServerHostName), port: Number(mail?.IncomingMailServerPortNumber), security: 'SSL', user: String(mail?.IncomingMailServerUsername) };
    const smtp: Server = { kind: 'smtp', host: String(mail?.OutgoingMailServerHostName), port: Number(mail?.OutgoingMailServerPortNumber), security: 'SSL', user: String(mail?.OutgoingMailServerUsername) };
    // UseSSL with the preferred (implicit TLS) ports.
    expect([mail?.IncomingMailServerUseSSL, imap.port, mail?.OutgoingMailServerUseSSL, smtp.port]).toEqual([true, dovecot.imapsPort, true, postfix.submissionsPort]);
    expect(await useServer(imap, password, caFile)).toMatch(/^OK /);
    expect(await useServer(smtp, String(mail?.OutgoingPassword), caFile)).toMatch(/^OK /);
    const [made] = await t.ctx.appPasswords.list(ALICE);
    expect(made?.name).toBe('iPad');
    expect(made?.last_used_at).not.toBeNull();
  });
});
