import { sql } from 'kysely';
import type { Db, DialectName } from './database.js';

/** The database server's clock, in milliseconds since 1970 (SQLite: this host's, through the library). */
export async function serverTimeMs(db: Db, dialect: DialectName): Promise<number> {
  const q =
    dialect === 'sqlite'
      ? sql<{ t: number | string }>`select (julianday('now') - 2440587.5) * 86400000.0 as t`
      : dialect === 'postgres'
        ? sql<{ t: number | string }>`select extract(epoch from clock_timestamp()) * 1000 as t`
        : sql<{ t: number | string }>`select unix_timestamp(now(3)) * 1000 as t`;
  const t = Number((await q.execute(db)).rows[0]?.t);
  if (!Number.isFinite(t)) throw new Error('the database gave no time');
  return t;
}
