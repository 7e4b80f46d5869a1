import type { Kysely } from 'kysely';

// Limits changed at run time (`limits set`, PATCH /admin/limits); a key without a row has its default.
// Stands alone: it uses no other table.
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('limits')
    .addColumn('key', 'varchar(64)', (c) => c.primaryKey())
    .addColumn('value', 'varchar(32)', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('limits').execute();
}
