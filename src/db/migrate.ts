import { Migrator } from 'kysely';
import type { Migration, MigrationProvider } from 'kysely';
import type { Db } from './database.js';
import * as m0001 from './migrations/0001_auth.js';
import * as m0002 from './migrations/0002_mail.js';
import * as m0004 from './migrations/0004_recovery_api_keys.js';

/** Migrations in order; names sort by their numeric prefix. */
const MIGRATIONS: Record<string, Migration> = {
  '0001_auth': m0001,
  '0002_mail': m0002,
  '0004_recovery_api_keys': m0004,
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
