import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chmodSync, chownSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { execFile } from 'node:child_process';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { createTestDatabase, dialectAvailable } from './helpers/dialects.js';
import type { TestDatabase } from './helpers/dialects.js';
import { startTestApp } from './helpers/app.js';
import type { TestApp } from './helpers/app.js';
import { mailDaemonsUnavailable, startDovecot, startPostfix } from './helpers/mail-daemons.js';
import type { Dovecot, Postfix } from './helpers/mail-daemons.js';
import { skipNotice } from './helpers/services.js';
import { startHookServer } from '../src/modules/mail-auth/hook-server.js';
import type { MapServer } from '../src/modules/routing/index.js';

const execFileP = promisify(execFile);
const daemonsMissing = mailDaemonsUnavailable();
if (daemonsMissing) skipNotice('Dovecot, Postfix and swaks', daemonsMissing);

const ALICE = 'alice@example.org';
const PW = 'alice-primary-pw';
const postfixGid = (): number | null => {
  const line = readFileSync('/etc/group', 'utf8').split('\n').find((l) => l.startsWith('postfix:'));
  return line ? Number(line.split(':')[2]) : null;
};

/** One message from outside (no AUTH) to port 25's stand-in; the reply code that decided it. */
async function fromOutside(port: number, from: string, to: string, subject: string): Promise<string> {
  const r = await execFileP('swaks', ['--server', `127.0.0.1:${port}`, '--from', from, '--to', to, '--header', `Subject: ${subject}`, '--timeout', '15'], { timeout: 30_000 }).then(
    (ok) => ok.stdout,
    (err: { stdout?: string }) => err.stdout ?? '',
  );
  return /^<\*\*\s+(\d{3})/m.exec(r)?.[1] ?? /^<-\s+(250)\s.*queued/im.exec(r)?.[1] ?? r;
}

/**
 * Postfix wired as install wires it with SQLite: its five lookup tables are
 * `proxy:socketmap:unix:…` on mailsvc's map server, and nothing in its
 * configuration names the database. Mail from outside reaches a mailbox and
 * an alias, an unknown address is refused for good, a change through mailsvc
 * is seen at once, and while mailsvc does not answer, mail is deferred (4xx),
 * never refused.
 */
describe('real Postfix resolves addresses through mailsvc\'s socketmap server', async () => {
  const available = daemonsMissing === null && (await dialectAvailable('sqlite'));
  let db: TestDatabase;
  let t: TestApp;
  let dovecot: Dovecot;
  let postfix: Postfix;
  let maps: MapServer;
  let run = '';
  const closers: (() => Promise<void>)[] = [];
  const arrived = async (user: string, subject: string): Promise<boolean> =>
    (await dovecot.doveadm(['-f', 'tab', 'fetch', '-u', user, 'hdr.subject', 'mailbox', 'INBOX', 'all']).catch(() => '')).includes(subject);

  beforeAll(async () => {
    if (!available) return;
    db = await createTestDatabase('sqlite');
    t = await startTestApp(db.url, { MAILSVC_MFA_REQUIRED: 'no' });
    await t.ctx.domains.create('example.org');
    await t.ctx.accounts.create({ address: ALICE, password: PW });
    await t.ctx.aliases.create({ source: 'sales@example.org', destinations: [ALICE] });
    run = mkdtempSync(join(tmpdir(), 'mailsvc-run-'));
    chmodSync(run, 0o755);
    const hookSocket = join(run, 'auth-hook.sock');
    closers.push((await startHookServer({ socketPath: hookSocket, socketGroup: null }, t.ctx.mailAuth, t.ctx.log)).close);
    // As installed: the socket in a directory of the group postfix, mode 0660.
    const gid = process.getuid?.() === 0 ? postfixGid() : null;
    const spool = mkdtempSync(join(run, 'spool-'));
    if (gid !== null) chownSync(spool, -1, gid);
    chmodSync(spool, 0o750);
    maps = await (await t.ctx.modules.get('routing')).startMapServer({ path: join(spool, 'maps'), socketGroup: gid });
    closers.push(() => maps.close());
    dovecot = await startDovecot({ dialect: 'sqlite', databaseUrl: db.url, hookSocket });
    postfix = await startPostfix({ dialect: 'sqlite', databaseUrl: db.url, saslPath: dovecot.authSocket, lmtp: dovecot.lmtpSocket, smtp: true, maps: maps.path ?? '' });
  }, 120_000);
  afterAll(async () => {
    await postfix?.stop();
    await dovecot?.stop();
    for (const c of closers.reverse()) await c().catch(() => undefined);
    await t?.close();
    await db?.drop();
    if (run) rmSync(run, { recursive: true, force: true });
  });

  it.skipIf(!available)('Postfix names no database: every table is the map server', async () => {
    const conf = (await execFileP('postconf', ['-c', postfix.configDir, '-n'], { encoding: 'utf8' })).stdout;
    for (const key of ['virtual_mailbox_domains', 'virtual_mailbox_maps', 'virtual_alias_maps', 'smtpd_sender_login_maps']) {
      expect(conf, key).toMatch(new RegExp(`^${key} = proxy:socketmap:unix:${maps.path ?? ''}:`, 'm'));
    }
    expect(conf).not.toMatch(/sqlite:|dbpath/);
  });

  it.skipIf(!available)('mail from outside reaches a mailbox and an alias; an unknown address is refused (550); a new mailbox is found at once', async () => {
    expect(await fromOutside(postfix.smtpPort, 'dave@remote.test', ALICE, 'to-mailbox-1')).toBe('250');
    expect(await fromOutside(postfix.smtpPort, 'dave@remote.test', 'sales@example.org', 'to-alias-2')).toBe('250');
    expect(await fromOutside(postfix.smtpPort, 'dave@remote.test', 'nobody@example.org', 'to-nobody-3')).toBe('550');
    await expect.poll(() => arrived(ALICE, 'to-mailbox-1'), { timeout: 30_000, interval: 200 }).toBe(true);
    await expect.poll(() => arrived(ALICE, 'to-alias-2'), { timeout: 30_000, interval: 200 }).toBe(true);
    await t.ctx.accounts.create({ address: 'nobody@example.org', password: 'nobody-primary-pw' });
    expect(await fromOutside(postfix.smtpPort, 'dave@remote.test', 'nobody@example.org', 'to-nobody-4')).toBe('250');
    await expect.poll(() => arrived('nobody@example.org', 'to-nobody-4'), { timeout: 30_000, interval: 200 }).toBe(true);
    expect(postfix.logs()).not.toMatch(/warning: .*(socketmap|proxymap)/);
  }, 90_000);

  it.skipIf(!available)('with the map server stopped, mail for the domain is deferred (4xx), never refused', async () => {
    await maps.close();
    const code = await fromOutside(postfix.smtpPort, 'dave@remote.test', ALICE, 'while-down-5');
    expect(code).toMatch(/^4\d\d$/);
  }, 60_000);
});
