import type { Kysely } from 'kysely';

// A keyed fingerprint of the administrator's password as the service last
// started with it: a different one at the next start revokes every token.
// Stands alone: it uses no table of another migration.
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('admin_fingerprint')
    .addColumn('id', 'integer', (c) => c.primaryKey())
    .addColumn('fingerprint', 'varchar(128)', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('admin_fingerprint').execute();
}
