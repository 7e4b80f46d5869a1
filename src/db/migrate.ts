import { Migrator, sql } from 'kysely';
import type { Migration, MigrationProvider } from 'kysely';
import type { Db } from './database.js';
import * as m0001 from './migrations/0001_auth.js';
import * as m0002 from './migrations/0002_mail.js';
import * as m0003 from './migrations/0003_audit_jobs.js';
import * as m0004 from './migrations/0004_recovery_api_keys.js';
import * as m0006 from './migrations/0006_limits.js';
import * as m0007 from './migrations/0007_routing.js';
import * as m0008 from './migrations/0008_admin_fingerprint.js';
import * as m0009 from './migrations/0009_bans_firewall.js';
import * as m0010 from './migrations/0010_backup_secrets.js';
import * as m0011 from './migrations/0011_dns.js';
import * as m0012 from './migrations/0012_stats.js';
import * as m0013 from './migrations/0013_service_settings.js';
import * as m0014 from './migrations/0014_panel_sessions.js';
import * as m0017 from './migrations/0017_stats_indexes.js';

/** Migrations in order; names sort by their numeric prefix. */
const MIGRATIONS: Record<string, Migration> = {
  '0001_auth': m0001,
  '0002_mail': m0002,
  '0003_audit_jobs': m0003,
  '0004_recovery_api_keys': m0004,
  '0006_limits': m0006,
  '0007_routing': m0007,
  '0008_admin_fingerprint': m0008,
  '0009_bans_firewall': m0009,
  '0010_backup_secrets': m0010,
  '0011_dns': m0011,
  '0012_stats': m0012,
  '0013_service_settings': m0013,
  '0014_panel_sessions': m0014,
  '0017_stats_indexes': m0017,
};

const provider: MigrationProvider = { getMigrations: () => Promise.resolve(MIGRATIONS) };

export const LATEST_SCHEMA = Object.keys(MIGRATIONS).sort().at(-1) ?? 'none';

/** Applies pending migrations; returns the names applied now. */
export async function migrateToLatest(db: Db): Promise<string[]> {
  const migrator = new Migrator({ db, provider });
  const { error, results } = await migrator.migrateToLatest();
  if (error) throw error instanceof Error ? error : new Error(String(error));
  return (results ?? []).filter((r) => r.status === 'Success').map((r) => r.migrationName);
}

/** The name of the newest applied migration, or null before the first. */
export async function schemaVersion(db: Db): Promise<string | null> {
  const migrator = new Migrator({ db, provider });
  const all = await migrator.getMigrations();
  return all.filter((m) => m.executedAt !== undefined).map((m) => m.name).sort().at(-1) ?? null;
}

/**
 * The newest applied migration, read with one plain query (no table is made):
 * null when the database has never been migrated.
 */
export async function appliedSchema(db: Db): Promise<string | null> {
  try {
    const r = await sql<{ name: string }>`select name from kysely_migration order by name desc limit 1`.execute(db);
    return r.rows[0]?.name ?? null;
  } catch (err) {
    // No migration table: never migrated. Anything else (an unreachable server) is the caller's to report.
    const e = err as { code?: string; errno?: number; message?: string };
    if (e.code === '42P01' || e.errno === 1146 || /no such table/.test(e.message ?? '')) return null;
    throw err;
  }
}
