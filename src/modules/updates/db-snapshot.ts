import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { exec, minimalEnv } from '../../adapters/exec.js';
import type { DialectName } from '../../db/database.js';

/**
 * A logical copy of the whole database taken before an update's migrations,
 * put back when the update is rolled back. The interface is all the updater
 * needs; this file is the minimal implementation until the shared
 * db-dump adapter replaces it (swap `createSnapshotter`).
 */
export type Snapshot = { dialect: DialectName; dir: string; file: string; tables: string[]; taken_at: string };

export interface DatabaseSnapshotter {
  /** Writes a snapshot into `dir` (created) and describes it. */
  take(dir: string): Promise<Snapshot>;
  /** Makes the database what it was at `take`: tables made since are dropped, the others recreated with their rows. */
  restore(snapshot: Snapshot): Promise<void>;
}

const TEN_MINUTES = 600_000;

/** Connection parts as environment variables, so no password appears in a process list. */
function pgEnv(url: URL): Record<string, string> {
  return minimalEnv({
    PGHOST: url.hostname,
    PGPORT: url.port || '5432',
    PGUSER: decodeURIComponent(url.username || 'postgres'),
    PGDATABASE: decodeURIComponent(url.pathname.slice(1)),
    ...(url.password ? { PGPASSWORD: decodeURIComponent(url.password) } : {}),
  });
}
function myArgs(url: URL): { args: string[]; env: Record<string, string> } {
  return {
    args: ['-h', url.hostname, '-P', url.port || '3306', '-u', decodeURIComponent(url.username || 'root')],
    env: minimalEnv(url.password ? { MYSQL_PWD: decodeURIComponent(url.password) } : {}),
  };
}
const quoteIdent = (name: string, q: string): string => `${q}${name.replaceAll(q, q + q)}${q}`;

async function sqliteTables(path: string): Promise<string[]> {
  const { default: Database } = await import('better-sqlite3');
  const db = new Database(path, { readonly: true, fileMustExist: true });
  try {
    return (db.prepare("select name from sqlite_master where type = 'table' and name not like 'sqlite_%'").all() as { name: string }[]).map((r) => r.name);
  } finally {
    db.close();
  }
}

async function serverTables(dialect: 'postgres' | 'mysql', url: URL): Promise<string[]> {
  if (dialect === 'postgres') {
    const r = await exec('psql', ['-XAtq', '-v', 'ON_ERROR_STOP=1', '-c', "select tablename from pg_tables where schemaname = current_schema()"], { env: pgEnv(url), timeoutMs: 60_000 });
    return r.stdout.split('\n').filter(Boolean);
  }
  const { args, env } = myArgs(url);
  const r = await exec('mariadb', [...args, '-N', '-B', '-e', 'show full tables where Table_type = \'BASE TABLE\'', decodeURIComponent(url.pathname.slice(1))], { env, timeoutMs: 60_000 });
  return r.stdout.split('\n').filter(Boolean).map((l) => l.split('\t')[0] ?? '');
}

export function createSnapshotter(dialect: DialectName, databaseUrl: string): DatabaseSnapshotter {
  const url = new URL(databaseUrl.replace(/^postgresql:/, 'postgres:').replace(/^mariadb:/, 'mysql:'));
  const sqlitePath = dialect === 'sqlite' ? databaseUrl.slice('sqlite://'.length) : '';
  return {
    async take(dir) {
      mkdirSync(dir, { recursive: true, mode: 0o700 });
      const file = join(dir, dialect === 'sqlite' ? 'database.sqlite' : 'database.sql');
      let tables: string[];
      if (dialect === 'sqlite') {
        // SQLite's online backup: a consistent copy while the service keeps its connection.
        const { default: Database } = await import('better-sqlite3');
        const db = new Database(sqlitePath, { fileMustExist: true });
        try {
          await db.backup(file);
        } finally {
          db.close();
        }
        tables = await sqliteTables(file);
      } else if (dialect === 'postgres') {
        tables = await serverTables(dialect, url);
        await exec('pg_dump', ['--format=plain', '--no-owner', '--no-privileges', '--clean', '--if-exists', '--file', file], { env: pgEnv(url), timeoutMs: TEN_MINUTES });
      } else {
        tables = await serverTables(dialect, url);
        const { args, env } = myArgs(url);
        await exec('mariadb-dump', [...args, '--single-transaction', '--add-drop-table', '--skip-triggers', '--result-file', file, decodeURIComponent(url.pathname.slice(1))], { env, timeoutMs: TEN_MINUTES });
      }
      const snapshot: Snapshot = { dialect, dir, file, tables, taken_at: new Date().toISOString() };
      writeFileSync(join(dir, 'snapshot.json'), JSON.stringify(snapshot, null, 2), { mode: 0o600 });
      return snapshot;
    },

    async restore(s) {
      if (s.dialect !== dialect) throw new Error(`the snapshot is of ${s.dialect}, the database is ${dialect}`);
      if (dialect === 'sqlite') {
        const { default: Database } = await import('better-sqlite3');
        const snap = new Database(s.file, { readonly: true, fileMustExist: true });
        try {
          // The backup API replaces the whole live file (schema and rows), under SQLite's own locks.
          await snap.backup(sqlitePath);
        } finally {
          snap.close();
        }
        return;
      }
      // Tables the failed update made are not in the dump: drop them first.
      const extra = (await serverTables(dialect, url)).filter((t) => !s.tables.includes(t));
      if (dialect === 'postgres') {
        const drops = extra.map((t) => `drop table if exists ${quoteIdent(t, '"')} cascade;`).join('\n');
        await exec('psql', ['-Xq', '-v', 'ON_ERROR_STOP=1', '--single-transaction', '-c', drops || 'select 1', '-f', s.file], { env: pgEnv(url), timeoutMs: TEN_MINUTES, maxOutputBytes: 16 * 1024 * 1024 });
      } else {
        const { args, env } = myArgs(url);
        const drops = extra.map((t) => `drop table if exists ${quoteIdent(t, '`')};`).join('\n');
        const input = Buffer.concat([Buffer.from(`set foreign_key_checks = 0;\n${drops}\n`), readFileSync(s.file), Buffer.from('\nset foreign_key_checks = 1;\n')]);
        await exec('mariadb', [...args, decodeURIComponent(url.pathname.slice(1))], { env, input, timeoutMs: TEN_MINUTES });
      }
    },
  };
}

/** Reads a snapshot's description back (after a crash, `mailsvc` can still restore it by hand). */
export function readSnapshot(dir: string): Snapshot {
  return JSON.parse(readFileSync(join(dir, 'snapshot.json'), 'utf8')) as Snapshot;
}
