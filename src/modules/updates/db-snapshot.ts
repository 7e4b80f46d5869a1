import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dumpDatabase, restoreDatabase } from '../../adapters/db-dump/index.js';
import { join } from 'node:path';
import { exec, minimalEnv } from '../../adapters/exec.js';
import type { DialectName } from '../../db/database.js';

/**
 * A logical copy of the whole database taken before an update's migrations,
 * put back when the update is rolled back. The interface is all the updater
 * needs; the dump itself is the shared db-dump adapter's (the backups use it
 * too), and this adds what a rollback needs beyond it: dropping the tables the
 * failed migrations created.
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
  const settings = { databaseUrl };
  return {
    async take(dir) {
      mkdirSync(dir, { recursive: true, mode: 0o700 });
      // The shared logical dump (the backups' too): SQLite's online backup, pg_dump -Fc, mariadb-dump --single-transaction.
      const file = join(dir, 'database.dump');
      const tables = dialect === 'sqlite' ? [] : await serverTables(dialect, url);
      await dumpDatabase(settings, file);
      const snapshot: Snapshot = { dialect, dir, file, tables: dialect === 'sqlite' ? await sqliteTables(file) : tables, taken_at: new Date().toISOString() };
      writeFileSync(join(dir, 'snapshot.json'), JSON.stringify(snapshot, null, 2), { mode: 0o600 });
      return snapshot;
    },

    async restore(s) {
      if (s.dialect !== dialect) throw new Error(`the snapshot is of ${s.dialect}, the database is ${dialect}`);
      if (dialect !== 'sqlite') {
        // Tables the failed update made are not in the dump, so restoring it would leave them: drop them first.
        // (SQLite: the backup API replaces the whole file, schema and rows.)
        const extra = (await serverTables(dialect, url)).filter((t) => !s.tables.includes(t));
        if (extra.length > 0 && dialect === 'postgres') {
          await exec('psql', ['-Xq', '-v', 'ON_ERROR_STOP=1', '-c', extra.map((t) => `drop table if exists ${quoteIdent(t, '"')} cascade;`).join('\n')], { env: pgEnv(url), timeoutMs: TEN_MINUTES });
        } else if (extra.length > 0) {
          const { args, env } = myArgs(url);
          const drops = `set foreign_key_checks = 0;\n${extra.map((t) => `drop table if exists ${quoteIdent(t, '`')};`).join('\n')}\n`;
          await exec('mariadb', [...args, decodeURIComponent(url.pathname.slice(1))], { env, input: Buffer.from(drops), timeoutMs: TEN_MINUTES });
        }
      }
      await restoreDatabase(settings, s.file);
    },
  };
}

/** Reads a snapshot's description back (after a crash, `mailsvc` can still restore it by hand). */
export function readSnapshot(dir: string): Snapshot {
  return JSON.parse(readFileSync(join(dir, 'snapshot.json'), 'utf8')) as Snapshot;
}
