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

/**
 * The migrations made before each module declared its own (history: never
 * edited, never renumbered; the names stand in kysely_migration on every
 * database). A module's new migrations live in its folder and come in
 * through its manifest (`migrations` in module.ts): see createSchema.
 */
export const HISTORY: Readonly<Record<string, Migration>> = {
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

/** Migrations by name (`0018_notes`), each loaded only when the migrator runs it. */
export type MigrationSource = Readonly<Record<string, () => Promise<Migration>>>;

/** The schema this version of mailsvc needs: every migration, in the order of their names. */
export type Schema = {
  /** The newest migration (what `/health/details` calls schema_latest). */
  readonly latest: string;
  /** Every migration's name, in order. */
  readonly names: readonly string[];
  /** Applies the pending migrations; returns the names applied now. */
  migrateToLatest(db: Db): Promise<string[]>;
  /** The newest applied migration this version knows, or null before the first. */
  version(db: Db): Promise<string | null>;
};

const NAME = /^(\d{4})_[a-z0-9_]+$/;

/**
 * The history and the migrations each module declares (`owner` names the
 * module in errors). Names must look like `0018_notes` and their numbers be
 * unique across every module: the migrator runs them in the order of their
 * names, and refuses a new one that sorts before one a database has applied.
 */
export function createSchema(declared: readonly { owner: string; migrations: MigrationSource }[] = []): Schema {
  const all: Record<string, Migration | (() => Promise<Migration>)> = { ...HISTORY };
  const byNumber = new Map(Object.keys(HISTORY).map((n) => [n.slice(0, 4), `${n} (src/db/migrations)`]));
  for (const { owner, migrations } of declared) {
    for (const [name, load] of Object.entries(migrations)) {
      const m = NAME.exec(name);
      if (!m) throw new Error(`migration ${name} of module ${owner}: a name is <4 digits>_<lowercase words>, e.g. 0018_notes`);
      const taken = byNumber.get(m[1] as string);
      if (taken) throw new Error(`migration ${name} of module ${owner}: number ${m[1]} is taken by ${taken}; take the next free number`);
      byNumber.set(m[1] as string, `${name} (module ${owner})`);
      all[name] = load;
    }
  }
  const names = Object.keys(all).sort();
  const provider: MigrationProvider = {
    getMigrations: async () => {
      const loaded: Record<string, Migration> = {};
      for (const name of names) {
        const m = all[name] as Migration | (() => Promise<Migration>);
        loaded[name] = typeof m === 'function' ? await m() : m;
      }
      return loaded;
    },
  };
  return {
    latest: names.at(-1) ?? 'none',
    names,
    async migrateToLatest(db) {
      const { error, results } = await new Migrator({ db, provider }).migrateToLatest();
      if (error) throw error instanceof Error ? error : new Error(String(error));
      return (results ?? []).filter((r) => r.status === 'Success').map((r) => r.migrationName);
    },
    async version(db) {
      const applied = await new Migrator({ db, provider }).getMigrations();
      return applied.filter((m) => m.executedAt !== undefined).map((m) => m.name).sort().at(-1) ?? null;
    },
  };
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
