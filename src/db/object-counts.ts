import { sql } from 'kysely';
import type { Db, DialectName } from './database.js';

/** The tables whose sizes the performance report shows (the ones that grow with use). */
const COUNTED = ['domains', 'accounts', 'aliases', 'mailbox_app_passwords', 'access_tokens', 'api_keys', 'audit_log', 'jobs', 'stats_messages'] as const;

/** Rows per table, read-only; a table a newer schema added and this database lacks is left out. */
export async function objectCounts(db: Db): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  for (const table of COUNTED) {
    try {
      const r = await sql<{ n: number | string }>`select count(*) as n from ${sql.table(table)}`.execute(db);
      out[table] = Number(r.rows[0]?.n ?? 0);
    } catch {
      // Not migrated that far: nothing to count.
    }
  }
  return out;
}

/** The database server's version (SQLite: the library's). */
export async function serverVersion(db: Db, dialect: DialectName): Promise<string | null> {
  const q = dialect === 'sqlite' ? sql<{ v: string }>`select sqlite_version() as v` : dialect === 'postgres' ? sql<{ v: string }>`show server_version` : sql<{ v: string }>`select version() as v`;
  const r = await q.execute(db);
  const row = r.rows[0] as Record<string, string> | undefined;
  return row ? (Object.values(row)[0] ?? null) : null;
}
