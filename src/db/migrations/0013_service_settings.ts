import type { Kysely } from 'kysely';

// Run-time settings changed through PATCH /admin/settings or `settings set`
// (update channel, auto-updates); a key without a row has its MAILSVC_* default.
// Stands alone: it uses no other table.
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('service_settings')
    .addColumn('key', 'varchar(64)', (c) => c.primaryKey())
    .addColumn('value', 'varchar(255)', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('service_settings').execute();
}
