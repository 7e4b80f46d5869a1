import type { Kysely } from 'kysely';

// Secrets of the backups: the key of the archives sent to remotes and the
// remotes' credentials, sealed (`value`); `shown_at` records that the one
// showing of the encryption key happened. Stands alone.
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('backup_secrets')
    .addColumn('name', 'varchar(200)', (c) => c.primaryKey())
    .addColumn('value', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('shown_at', 'bigint')
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('backup_secrets').execute();
}
