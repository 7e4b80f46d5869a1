import { Kysely, MysqlDialect, PostgresDialect, SqliteDialect, sql } from 'kysely';
import type { Dialect } from 'kysely';
import type SqliteDatabaseType from 'better-sqlite3';
import type PgType from 'pg';
import type Mysql2Type from 'mysql2';
import { createRequire } from 'node:module';
import { closeSync, existsSync, mkdirSync, openSync } from 'node:fs';
import { dirname } from 'node:path';
import type { Database } from './schema.js';
import { withStatementCache } from './statement-cache.js';
import { dialectOf } from './dialect.js';

export { dialectOf } from './dialect.js';
export type { DialectName } from './dialect.js';

export type Db = Kysely<Database>;

// Only the driver of the configured dialect is loaded, when the database is
// first opened: a command that never opens it loads none of them.
const require = createRequire(import.meta.url);
const drivers = {
  sqlite: (): typeof SqliteDatabaseType => require('better-sqlite3') as typeof SqliteDatabaseType,
  pg: (): typeof PgType => {
    const pg = require('pg') as typeof PgType;
    // BIGINT (epoch milliseconds) comes back from pg as a string unless told otherwise.
    pg.types.setTypeParser(pg.types.builtins.INT8, (v) => Number(v));
    return pg;
  },
  mysql: (): typeof Mysql2Type => require('mysql2') as typeof Mysql2Type,
};

/** Where the SQLite driver is, for a worker thread that opens its own connection (the statistics writer). */
export function sqliteDriverPath(): string {
  return require.resolve('better-sqlite3');
}

function sqlitePath(url: string): string {
  const path = url.replace(/^sqlite:\/\//, '');
  return path === '' ? ':memory:' : path;
}

function buildDialect(url: string): Dialect {
  switch (dialectOf(url)) {
    case 'sqlite': {
      const path = sqlitePath(url);
      if (path !== ':memory:') {
        // Owner and group only: the file holds password hashes and sealed secrets.
        // SQLite gives the -wal and -shm files the database file's mode.
        mkdirSync(dirname(path), { recursive: true, mode: 0o750 });
        if (!existsSync(path)) closeSync(openSync(path, 'a', 0o640));
      }
      const SqliteDatabase = drivers.sqlite();
      const database = new SqliteDatabase(path);
      database.pragma('journal_mode = WAL');
      // In WAL mode NORMAL cannot corrupt the database; it only skips the fsync per commit.
      database.pragma('synchronous = NORMAL');
      database.pragma('busy_timeout = 5000');
      database.pragma('foreign_keys = ON');
      return new SqliteDialect({ database: withStatementCache(database) });
    }
    case 'postgres': {
      const pg = drivers.pg();
      const pool = new pg.Pool({ connectionString: url, max: 10 });
      // An idle connection the server ends (a restart, an administrator) is an
      // 'error' event on the pool: unheard, it would crash the process. The pool
      // drops that client and the next query opens a new one.
      pool.on('error', () => undefined);
      return new PostgresDialect({ pool });
    }
    case 'mysql':
      return new MysqlDialect({
        pool: drivers.mysql().createPool({ uri: url.replace(/^mariadb:/, 'mysql:'), connectionLimit: 10, supportBigNumbers: true, bigNumberStrings: false }),
      });
  }
}

export function createDb(url: string): Db {
  return new Kysely<Database>({ dialect: buildDialect(url) });
}

export async function pingDb(db: Db): Promise<boolean> {
  try {
    await sql`select 1`.execute(db);
    return true;
  } catch {
    return false;
  }
}
