import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chmodSync, chownSync, mkdirSync, mkdtempSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadMailSettings } from '../src/config/mail-settings.js';
import { createTestDatabase } from './helpers/dialects.js';
import type { TestDatabase } from './helpers/dialects.js';
import { startTestApp } from './helpers/app.js';
import type { TestApp } from './helpers/app.js';
import { mailDaemonsUnavailable, startDovecot, startPostfix } from './helpers/mail-daemons.js';
import type { Dovecot, Postfix } from './helpers/mail-daemons.js';
import { swaksSend } from './helpers/mail-clients.js';
import { skipNotice } from './helpers/services.js';
import { startHookServer } from '../src/modules/mail-auth/hook-server.js';
import { startPolicyServer } from '../src/modules/send-limits/policy-server.js';

const daemonsMissing = mailDaemonsUnavailable();
if (daemonsMissing) skipNotice('Dovecot, Postfix and swaks', daemonsMissing);

const ALICE = 'alice@example.org';
const CAROL = 'carol@example.org';

/**
 * The policy service on a Unix socket (MAILSVC_POLICY_LISTEN=unix:…, group
 * postfix, mode 0660) as docs/mail.md deploys it: real Postfix asks it there
 * and the send limit holds.
 */
describe('policy service on a Unix socket, asked by real Postfix', () => {
  const available = daemonsMissing === null;
  let db: TestDatabase;
  let t: TestApp;
  let dovecot: Dovecot;
  let postfix: Postfix;
  let policyPath = '';
  const closers: (() => Promise<void>)[] = [];

  beforeAll(async () => {
    if (!available) return;
    db = await createTestDatabase('sqlite');
    t = await startTestApp(db.url, { MAILSVC_MFA_REQUIRED: 'no' });
    await t.ctx.domains.create('example.org');
    await t.ctx.accounts.create({ address: ALICE, password: 'alice-primary-pw', send_rate_per_minute: 2 });
    await t.ctx.accounts.create({ address: CAROL, password: 'carol-primary-pw' });
    // As deployed: a directory owned by mailsvc with group postfix, mode 0750.
    const run = mkdtempSync(join(tmpdir(), 'mailsvc-run-'));
    chmodSync(run, 0o755);
    const group = loadMailSettings({ MAILSVC_MAIL_AUTH_SOCKET_GROUP: 'dovecot' }, t.dataDir).authHookSocketGroup;
    const hookSocket = join(run, 'auth-hook.sock');
    closers.push((await startHookServer({ socketPath: hookSocket, socketGroup: group }, t.ctx.mailAuth, t.ctx.log)).close);
    const spool = join(run, 'policy');
    const mail = loadMailSettings({ MAILSVC_POLICY_LISTEN: `unix:${spool}/policy.sock`, MAILSVC_POLICY_SOCKET_GROUP: 'postfix' }, t.dataDir);
    mkdirSync(spool, { mode: 0o750 });
    const postfixGid = mail.policyListen && 'socketGroup' in mail.policyListen ? mail.policyListen.socketGroup : null;
    if (postfixGid !== null) chownSync(spool, -1, postfixGid);
    policyPath = `${spool}/policy.sock`;
    closers.push((await startPolicyServer(mail.policyListen ?? { host: '127.0.0.1', port: 0 }, t.ctx.sendLimits, t.ctx.sendCounter, t.ctx.log)).close);
    dovecot = await startDovecot({ dialect: 'sqlite', databaseUrl: db.url, hookSocket });
    postfix = await startPostfix({ dialect: 'sqlite', databaseUrl: db.url, saslPath: dovecot.authSocket, policy: `unix:${policyPath}`, lmtp: dovecot.lmtpSocket });
  }, 120_000);
  afterAll(async () => {
    await postfix?.stop();
    await dovecot?.stop();
    for (const c of closers) await c();
    await t?.close();
    await db?.drop();
  });

  it.skipIf(!available)('the socket is 0660 with group postfix; message 3 of a 2-per-minute account is deferred', async () => {
    const st = statSync(policyPath);
    expect(st.mode & 0o777).toBe(0o660);
    const codes: string[] = [];
    for (let i = 0; i < 3; i++) codes.push((await swaksSend({ port: postfix.submissionPort, user: ALICE, pass: 'alice-primary-pw', from: ALICE, to: CAROL })).code);
    expect(codes.slice(0, 2), postfix.logs()).toEqual(['250', '250']);
    expect(codes[2]).toMatch(/^4\d\d$/);
    expect(postfix.logs()).not.toMatch(/problem talking to server|policy service.*(failed|error)/i);
  }, 60_000);
});
