import { PostgresAdapter } from 'kysely';
import type { Kysely } from 'kysely';

// The notes table. Found through the module's manifest (module.ts `migrations`);
// the number is the next free one after every other migration's.
export async function up(db: Kysely<unknown>): Promise<void> {
  // An id the database numbers: `serial` on PostgreSQL, autoincrement on SQLite and MariaDB.
  const pg = db.getExecutor().adapter instanceof PostgresAdapter;
  await db.schema
    .createTable('domain_notes')
    .addColumn('id', pg ? 'serial' : 'integer', (c) => (pg ? c.primaryKey() : c.primaryKey().autoIncrement()))
    // No foreign key into the domains module's table: the notes go with their domain through domain.deleting.
    .addColumn('domain_id', 'integer', (c) => c.notNull())
    .addColumn('text', 'varchar(500)', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('domain_notes_domain').on('domain_notes').column('domain_id').execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('domain_notes').execute();
}
