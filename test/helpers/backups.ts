import { createHash, randomBytes } from 'node:crypto';
import { chmodSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, lstatSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { sql } from 'kysely';
import { createDb } from '../../src/db/database.js';
import type { DialectName } from '../../src/db/database.js';
import { runCli } from './cli.js';
import type { CliResult } from './cli.js';

/** A Maildir message as Dovecot stores it: headers, a body, a name with the size and flags. */
export function writeMessage(dir: string, n: number, when: number, mode = 0o600): string {
  const body = `Return-Path: <s${n}@example.net>\r\nFrom: s${n}@example.net\r\nTo: u@example.com\r\nSubject: message ${n}\r\nMessage-ID: <${n}.${randomBytes(4).toString('hex')}@example.net>\r\n\r\n${randomBytes(200 + (n % 7) * 300).toString('base64')}\r\n`;
  const name = `${Math.floor(when / 1000)}.M${n}P1.host,S=${body.length},W=${body.length + 6}:2,S`;
  const path = join(dir, name);
  writeFileSync(path, body, { mode });
  chmodSync(path, mode);
  utimesSync(path, when / 1000, when / 1000);
  return path;
}

/** A mail storage of `users` mailboxes with `perUser` messages each (cur/new/tmp, dovecot files), times in the past. */
export function makeMailStorage(root: string, users = 3, perUser = 20): void {
  const base = Date.now() - 30 * 86_400_000;
  for (let u = 0; u < users; u++) {
    const md = join(root, 'example.com', `user${u}`, 'Maildir');
    for (const sub of ['cur', 'new', 'tmp', '.Sent/cur', '.Sent/new', '.Sent/tmp']) mkdirSync(join(md, sub), { recursive: true, mode: 0o700 });
    for (let i = 0; i < perUser; i++) writeMessage(join(md, i % 4 === 0 ? 'new' : i % 5 === 0 ? '.Sent/cur' : 'cur'), u * 1000 + i, base + (u * perUser + i) * 60_000, i % 3 === 0 ? 0o640 : 0o600);
    writeFileSync(join(md, 'dovecot-uidlist'), `3 V${u} N${perUser}\n`, { mode: 0o600 });
  }
}

export type TreeEntry = { type: 'file' | 'dir'; mode: number; mtime: number; sha256?: string };

/** Every entry under `root`: type, mode, modification time (ms, whole) and content hash. */
export function treeSnapshot(root: string): Record<string, TreeEntry> {
  const out: Record<string, TreeEntry> = {};
  const walk = (dir: string): void => {
    for (const name of readdirSync(dir).sort()) {
      const p = join(dir, name);
      const st = lstatSync(p);
      const rel = relative(root, p);
      if (st.isDirectory()) {
        out[rel] = { type: 'dir', mode: st.mode & 0o7777, mtime: 0 };
        walk(p);
      } else out[rel] = { type: 'file', mode: st.mode & 0o7777, mtime: Math.floor(st.mtimeMs / 1000), sha256: createHash('sha256').update(readFileSync(p)).digest('hex') };
    }
  };
  walk(root);
  return out;
}

/** Every row of every table but `skip`, sorted, as JSON text: equal text = equal rows. */
export async function tableRows(url: string, dialect: DialectName, skip: string[] = []): Promise<Record<string, string[]>> {
  const db = createDb(url);
  try {
    const q =
      dialect === 'sqlite'
        ? sql<{ name: string }>`select name from sqlite_master where type = 'table' and name not like 'sqlite_%'`
        : dialect === 'postgres'
          ? sql<{ name: string }>`select table_name as name from information_schema.tables where table_schema = current_schema() and table_type = 'BASE TABLE'`
          : sql<{ name: string }>`select table_name as name from information_schema.tables where table_schema = database() and table_type = 'BASE TABLE'`;
    const names = (await q.execute(db)).rows.map((r) => r.name).filter((n) => !skip.includes(n)).sort();
    const out: Record<string, string[]> = {};
    for (const t of names) out[t] = (await sql<Record<string, unknown>>`select * from ${sql.table(t)}`.execute(db)).rows.map((r) => JSON.stringify(r)).sort();
    return out;
  } finally {
    await db.destroy();
  }
}

/** Adds rows the round trip must bring back: domains and limits. */
export async function seedRows(url: string, tag: string, n = 5): Promise<void> {
  const db = createDb(url);
  try {
    for (let i = 0; i < n; i++) await db.insertInto('domains').values({ name: `${tag}${i}.example`, active: 1, created_at: 1_700_000_000_000 + i, updated_at: 1_700_000_000_000 + i }).execute();
    await db.insertInto('limits').values({ key: `x-${tag}`, value: '42', updated_at: 1 }).execute();
  } finally {
    await db.destroy();
  }
}

export type BackupEnv = { env: Record<string, string>; dir: string; mail: string; local: string; data: string; cli(args: string[], timeoutMs?: number): Promise<CliResult> };

/** A temp layout (data dir, mail storage, backup dir, configuration) and the CLI's environment for `url`. */
export function backupEnv(url: string, extra: Record<string, string> = {}): BackupEnv {
  const dir = mkdtempSync(join(tmpdir(), 'mailsvc-backup-'));
  const data = join(dir, 'data');
  const mail = join(dir, 'vmail');
  const local = join(dir, 'backups');
  const conf = join(dir, 'etc-postfix');
  mkdirSync(data, { recursive: true });
  mkdirSync(conf, { recursive: true });
  writeFileSync(join(conf, 'main.cf'), 'myhostname = mail.example.com\n');
  const env = {
    MAILSVC_DATA_DIR: data,
    MAILSVC_DATABASE_URL: url,
    MAILSVC_MAIL_STORAGE: mail,
    MAILSVC_BACKUP_LOCAL_DIR: local,
    MAILSVC_BACKUP_CONFIG_PATHS: conf,
    MAILSVC_BACKUP_TYPE: 'incremental',
    MAILSVC_HELPER: 'direct',
    // The configuration archived is in the restore allow-list (the daemon directories from the helper's settings).
    MAILSVC_POSTFIX_CONFIG_DIR: conf,
    MAILSVC_SECRET_KEY: randomBytes(32).toString('base64'),
    ...extra,
  };
  return { env, dir, mail, local, data, cli: (args, timeoutMs = 120_000) => runCli(args, { env, timeoutMs }) };
}
