import type { Db } from '../db/database.js';
import { createSchema } from '../db/migrate.js';
import type { Schema } from '../db/migrate.js';
import type { AnyModuleManifest } from '../modules/module-types.js';
import { loadModuleList } from './module-list.js';

/** The schema of these modules: the history (src/db/migrations) and the migrations each module declares. */
export function schemaOf(list: readonly AnyModuleManifest[]): Schema {
  return createSchema(list.flatMap((m) => (m.migrations ? [{ owner: m.name, migrations: m.migrations }] : [])));
}

let schema: Promise<Schema> | undefined;

/** The schema this version of mailsvc needs: that of the module list. */
export function loadSchema(): Promise<Schema> {
  schema ??= loadModuleList().then(schemaOf);
  return schema;
}

/** Applies the pending migrations of this version's schema; returns the names applied now. */
export async function migrateToLatest(db: Db): Promise<string[]> {
  return (await loadSchema()).migrateToLatest(db);
}
