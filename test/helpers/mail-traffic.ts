import { execFile } from 'node:child_process';
import { chmodSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createDb } from '../../src/db/database.js';
import { migrateToLatest } from '../../src/app/schema.js';
import { createTestDatabase } from './dialects.js';
import { startDovecot, startPostfix } from './mail-daemons.js';
import { startStubMailHook } from './stub-mail-hook.js';

/**
 * Real mail through the test Postfix and Dovecot (deploy/'s configuration),
 * for tests that read Postfix's log: alice and bob have mailboxes at
 * example.org; authenticated submissions come from them, plain SMTP from
 * strangers at remote.test. Mail for other domains is discarded by Postfix.
 */

export const ALICE = 'alice@example.org';
export const BOB = 'bob@example.org';
export const STRANGER = 'stranger@remote.test';
export const SECRET_SUBJECT = 'Quarterly-figures-7f3a';
const PW = 'app1.secretsecret';

export type Message = { auth?: string; from: string; to: string; bodyBytes: number };

function swaks(args: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile('swaks', [...args, '--timeout', '15'], { timeout: 30_000 }, (err, stdout, stderr) => (err ? reject(new Error(`${stdout}${stderr}`)) : resolve(`${stdout}${stderr}`)));
  });
}

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
    await db.insertInto('accounts').values([account(ALICE), account(BOB)]).execute();
  } finally {
    await db.destroy();
  }
}

export type MailRun = { logs: string[] };

/**
 * Starts the daemons, sends each batch of messages and waits until Postfix
 * logged every one removed from its queue; returns the log as it stood after
 * each batch (each text includes the earlier ones).
 */
export async function mailTraffic(batches: Message[][]): Promise<MailRun> {
  const db = await createTestDatabase('sqlite');
  const hookDir = mkdtempSync(join(tmpdir(), 'mailsvc-hook-'));
  chmodSync(hookDir, 0o755);
  await seed(db.url);
  const hook = await startStubMailHook(join(hookDir, 'auth-hook.sock'), { [ALICE]: [PW], [BOB]: [PW] }, {});
  const dovecot = await startDovecot({ dialect: 'sqlite', databaseUrl: db.url, hookSocket: hook.socketPath });
  const postfix = await startPostfix({ dialect: 'sqlite', databaseUrl: db.url, saslPath: dovecot.authSocket, lmtp: dovecot.lmtpSocket, smtp: true });
  const logs: string[] = [];
  try {
    let sent = 0;
    for (const batch of batches) {
      for (const m of batch) {
        const body = 'x'.repeat(m.bodyBytes);
        const auth = m.auth ? ['--auth', 'PLAIN', '--auth-user', m.auth, '--auth-password', PW] : [];
        await swaks(['--server', `127.0.0.1:${m.auth ? postfix.submissionPort : postfix.smtpPort}`, ...auth, '--from', m.from, '--to', m.to,
          '--header', `Subject: ${SECRET_SUBJECT}`, '--body', body]);
        sent += 1;
      }
      const deadline = Date.now() + 20_000;
      const removed = () => (readFileSync(postfix.logFile, 'utf8').match(/\/qmgr\[\d+\]: [0-9A-Za-z]+: removed$/gm) ?? []).length;
      while (removed() < sent && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
      if (removed() < sent) throw new Error(`Postfix did not finish ${sent} message(s):\n${postfix.logs()}`);
      logs.push(readFileSync(postfix.logFile, 'utf8'));
    }
  } finally {
    await Promise.all([postfix.stop(), dovecot.stop(), hook.stop()]);
    rmSync(hookDir, { recursive: true, force: true });
    await db.drop();
  }
  return { logs };
}
