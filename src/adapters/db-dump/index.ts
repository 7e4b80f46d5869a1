import { createRequire } from 'node:module';
import { existsSync, mkdirSync, rmSync } from 'node:fs';
import { dirname } from 'node:path';
import type SqliteDatabaseType from 'better-sqlite3';
import { minimalEnv } from '../exec.js';
import { runTool } from './run-tool.js';

export { DumpToolError } from './run-tool.js';

/** What a dump needs to know: only where the database is (MAILSVC_DATABASE_URL). */
export type DumpSettings = { databaseUrl: string };
export type DumpDialect = 'sqlite' | 'postgres' | 'mysql';

const require = createRequire(import.meta.url);

export function dumpDialect(url: string): DumpDialect {
  if (url.startsWith('sqlite:')) return 'sqlite';
  if (/^postgres(ql)?:/.test(url)) return 'postgres';
  if (/^(mysql|mariadb):/.test(url)) return 'mysql';
  throw new Error(`unsupported database URL scheme ${url.split(':')[0]}:`);
}

const sqlitePath = (url: string): string => url.replace(/^sqlite:\/\//, '');

/** The URL split into what the client tools take; the password goes in the environment, never in argv (ps shows argv). */
export function server(url: string): { host: string; port: string; user: string; password: string; database: string } {
  const u = new URL(url.replace(/^mariadb:/, 'mysql:'));
  return {
    host: u.hostname.replace(/^\[|\]$/g, '') || 'localhost',
    port: u.port,
    user: decodeURIComponent(u.username),
    password: decodeURIComponent(u.password),
    database: decodeURIComponent(u.pathname.replace(/^\//, '')),
  };
}

export function pgArgs(url: string): { args: string[]; env: Record<string, string>; database: string } {
  const s = server(url);
  const env = minimalEnv(s.password ? { PGPASSWORD: s.password } : {});
  const args = ['--host', s.host, ...(s.port ? ['--port', s.port] : []), ...(s.user ? ['--username', s.user] : []), '--no-password'];
  return { args, env, database: s.database };
}

export function myArgs(url: string): { args: string[]; env: Record<string, string>; database: string } {
  const s = server(url);
  const env = minimalEnv(s.password ? { MYSQL_PWD: s.password } : {});
  // --protocol=TCP: "localhost" must not silently mean the local socket of another server.
  const args = ['--host', s.host, ...(s.port ? ['--port', s.port] : []), ...(s.user ? ['--user', s.user] : []), '--protocol=TCP'];
  return { args, env, database: s.database };
}

/**
 * A transactional logical copy of the database into `file`:
 * - SQLite: the online backup API (a consistent copy while the service writes);
 * - PostgreSQL: `pg_dump --format=custom` (one snapshot);
 * - MariaDB: `mariadb-dump --single-transaction` (one InnoDB snapshot, no table locks), one
 *   INSERT per row (`--skip-extended-insert`: a reader can count each table's rows in the dump).
 * Every exit status is checked: a tool that fails rejects, and the file is removed.
 */
export type DumpOptions = {
  signal?: AbortSignal;
  /** PostgreSQL: dump this exported snapshot (pg_export_snapshot() of a transaction the caller holds open), so the caller's own reads see the same data. */
  pgSnapshot?: string;
};

export async function dumpDatabase(settings: DumpSettings, file: string, opts: DumpOptions = {}): Promise<void> {
  const signal = opts.signal;
  const url = settings.databaseUrl;
  try {
    switch (dumpDialect(url)) {
      case 'sqlite': {
        const Sqlite = require('better-sqlite3') as typeof SqliteDatabaseType;
        const src = new Sqlite(sqlitePath(url), { readonly: true, fileMustExist: true });
        try {
          await src.backup(file);
        } finally {
          src.close();
        }
        // The copy inherits WAL mode, and a reader of a WAL file leaves -wal/-shm files beside it:
        // a dump is one self-contained file.
        const copy = new Sqlite(file);
        try {
          copy.pragma('journal_mode = DELETE');
        } finally {
          copy.close();
        }
        return;
      }
      case 'postgres': {
        const p = pgArgs(url);
        await runTool({ file: 'pg_dump', args: [...p.args, '--format=custom', '--no-owner', '--no-privileges', ...(opts.pgSnapshot ? ['--snapshot', opts.pgSnapshot] : []), '--file', file, '--dbname', p.database], env: p.env, signal });
        return;
      }
      case 'mysql': {
        const m = myArgs(url);
        await runTool({
          file: 'mariadb-dump',
          args: [...m.args, '--single-transaction', '--routines', '--triggers', '--skip-lock-tables', '--hex-blob', '--skip-extended-insert', '--default-character-set=utf8mb4', `--result-file=${file}`, m.database],
          env: m.env,
          signal,
        });
        return;
      }
    }
  } catch (err) {
    rmSync(file, { force: true });
    throw err;
  }
}

/**
 * Replaces the contents of the database `settings.databaseUrl` names with the
 * dump in `file` (made by dumpDatabase). SQLite: the backup API copies the
 * dump's pages into the live file (open connections see the new contents).
 * PostgreSQL: `pg_restore --clean --if-exists --single-transaction`. MariaDB:
 * the dump (DROP TABLE IF EXISTS + CREATE + INSERT) fed to `mariadb` into the
 * URL's database, whatever database name the dump was taken from.
 */
export async function restoreDatabase(settings: DumpSettings, file: string, signal?: AbortSignal): Promise<void> {
  const url = settings.databaseUrl;
  if (!existsSync(file)) throw new Error(`the dump ${file} does not exist`);
  switch (dumpDialect(url)) {
    case 'sqlite': {
      const Sqlite = require('better-sqlite3') as typeof SqliteDatabaseType;
      const src = new Sqlite(file, { readonly: true, fileMustExist: true });
      try {
        // A fresh host: the data directory may not exist yet.
        mkdirSync(dirname(sqlitePath(url)), { recursive: true, mode: 0o750 });
        await src.backup(sqlitePath(url));
      } finally {
        src.close();
      }
      return;
    }
    case 'postgres': {
      const p = pgArgs(url);
      await runTool({
        file: 'pg_restore',
        args: [...p.args, '--clean', '--if-exists', '--no-owner', '--no-privileges', '--single-transaction', '--exit-on-error', '--dbname', p.database, file],
        env: p.env,
        signal,
      });
      return;
    }
    case 'mysql': {
      const m = myArgs(url);
      // The dump names no database (no --databases: no CREATE DATABASE / USE), so it lands in the one given here.
      await runTool({ file: 'mariadb', args: [...m.args, '--batch', '--default-character-set=utf8mb4', m.database], stdinFile: file, env: m.env, signal });
      return;
    }
  }
}

/** A scratch database next to the configured one (for `backup verify`): created empty, dropped by `drop()`. */
export async function createScratchDatabase(settings: DumpSettings, suffix: string): Promise<{ url: string; drop(): Promise<void> }> {
  const url = settings.databaseUrl;
  if (!/^[a-z0-9_]{1,20}$/.test(suffix)) throw new Error('scratch suffix: lower-case letters, digits and _ only');
  const dialect = dumpDialect(url);
  if (dialect === 'sqlite') throw new Error('SQLite needs no scratch server database: use a scratch file');
  const s = server(url);
  const name = `${s.database}_${suffix}`.slice(0, 63);
  const u = new URL(url);
  u.pathname = `/${name}`;
  const run = async (statement: string): Promise<void> => {
    if (dialect === 'postgres') {
      const p = pgArgs(url);
      await runTool({ file: 'psql', args: [...p.args, '--dbname', p.database, '--set', 'ON_ERROR_STOP=1', '--quiet', '--command', statement], env: p.env });
    } else {
      const m = myArgs(url);
      await runTool({ file: 'mariadb', args: [...m.args, '--batch', '--execute', statement], env: m.env });
    }
  };
  const quoted = dialect === 'postgres' ? `"${name}"` : `\`${name}\``;
  await run(`drop database if exists ${quoted}${dialect === 'postgres' ? ' with (force)' : ''}`);
  await run(`create database ${quoted}`);
  return { url: u.toString(), drop: () => run(`drop database if exists ${quoted}${dialect === 'postgres' ? ' with (force)' : ''}`) };
}
