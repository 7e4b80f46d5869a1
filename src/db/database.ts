import { Kysely, MysqlDialect, PostgresDialect, SqliteDialect, sql } from 'kysely';
import type { Dialect } from 'kysely';
import type SqliteDatabaseType from 'better-sqlite3';
import type PgType from 'pg';
import type Mysql2Type from 'mysql2';
import { createRequire } from 'node:module';
import { appendFileSync, closeSync, existsSync, fchownSync, fstatSync, mkdirSync, openSync, statSync } from 'node:fs';
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

function buildDialect(url: string): { dialect: Dialect; stamp: StampFactory | undefined } {
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
      // The stamp files' descriptors are closed with the database.
      const opened = new Set<number>();
      const stamp: StampFactory | undefined = path === ':memory:' ? undefined : (name) => fileStamp(`${path}-${name}`, path, opened);
      const closeStamps = (): void => {
        for (const fd of opened) closeSync(fd);
        opened.clear();
      };
      return { dialect: new SqliteDialect({ database: withStatementCache(database, 256, closeStamps) }), stamp };
    }
    case 'postgres': {
      const pg = drivers.pg();
      const pool = new pg.Pool({ connectionString: url, max: 10 });
      // An idle connection the server ends (a restart, an administrator) is an
      // 'error' event on the pool: unheard, it would crash the process. The pool
      // drops that client and the next query opens a new one.
      pool.on('error', () => undefined);
      return { dialect: new PostgresDialect({ pool }), stamp: undefined };
    }
    case 'mysql':
      return {
        dialect: new MysqlDialect({
          pool: drivers.mysql().createPool({ uri: url.replace(/^mariadb:/, 'mysql:'), connectionLimit: 10, supportBigNumbers: true, bigNumberStrings: false }),
        }),
        stamp: undefined,
      };
  }
}

/**
 * A change stamp that every process on the host reads without a query: a
 * file beside the SQLite database, one byte longer after each `touch()`
 * (O_APPEND, so concurrent writers never lose one; it grows by a byte per
 * touch and is never rewritten). `read()` is one fstat of the file kept open:
 * a number that moved since the last read means it was touched (or removed,
 * and then opened anew). undefined when the file cannot be opened: the caller
 * asks the database instead. Made with the database's mode (0640) by the
 * first process that reads or touches it.
 */
export type ChangeStamp = { read(): number | undefined; touch(): void };
type StampFactory = (name: string) => ChangeStamp;

function fileStamp(file: string, dbFile: string, opened: Set<number>): ChangeStamp {
  let fd: number | undefined;
  let seen = -1;
  let version = 0;
  const open = (): boolean => {
    try {
      // O_APPEND|O_CREAT: made if missing, never changed by the reader.
      fd = openSync(file, 'a', 0o640);
      opened.add(fd);
      ownLikeDatabase(fd, dbFile);
      return true;
    } catch {
      return false;
    }
  };
  const close = (): void => {
    if (fd === undefined) return;
    opened.delete(fd);
    closeSync(fd);
    fd = undefined;
  };
  return {
    read() {
      if (fd === undefined && !open()) return undefined;
      let st = fstatSync(fd as number);
      // Removed (and maybe made again by a writer): the name's file is the one that counts.
      if (st.nlink === 0) {
        close();
        if (!open()) return undefined;
        st = fstatSync(fd as number);
        seen = -1;
      }
      if (st.size !== seen) {
        seen = st.size;
        version += 1;
      }
      return version;
    },
    touch() {
      try {
        appendFileSync(file, '.', { mode: 0o640 });
        // Opened here if it was not yet: as root, that gives a file this made to the database's owner.
        if (fd === undefined) open();
      } catch (err) {
        throw new Error(`cannot write ${file} (${err instanceof Error ? err.message : String(err)}): it must belong to the user the service runs as, like the database`);
      }
    },
  };
}

/**
 * Root (a CLI command, a root unit) that makes the stamp file gives it to the
 * database file's owner, so the service user can still append to it; a file
 * owned by root would make every later revocation by the service fail.
 */
function ownLikeDatabase(fd: number, dbFile: string): void {
  if (process.getuid?.() !== 0) return;
  try {
    const own = fstatSync(fd);
    const db = statSync(dbFile);
    if (own.uid !== db.uid || own.gid !== db.gid) fchownSync(fd, db.uid, db.gid);
  } catch {
    // No database file yet (it is made by the first migration): nothing to match.
  }
}

const stamps = new WeakMap<Db, StampFactory>();

/**
 * The change stamp `name` of a SQLite database file (see ChangeStamp);
 * undefined for PostgreSQL, MariaDB and an in-memory SQLite, whose callers
 * keep their counter in a table.
 */
export function changeStampOf(db: Db, name: string): ChangeStamp | undefined {
  return stamps.get(db)?.(name);
}

export function createDb(url: string): Db {
  const { dialect, stamp } = buildDialect(url);
  const db = new Kysely<Database>({ dialect });
  if (stamp) stamps.set(db, stamp);
  return db;
}

export async function pingDb(db: Db): Promise<boolean> {
  try {
    await sql`select 1`.execute(db);
    return true;
  } catch {
    return false;
  }
}
