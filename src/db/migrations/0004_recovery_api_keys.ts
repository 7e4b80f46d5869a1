import type { Kysely } from 'kysely';

// Recovery codes of the administrator's TOTP, and API keys for automation.
// Stands alone: it uses no table of 0002 or 0003.
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('admin_recovery_codes')
    .addColumn('id', 'varchar(32)', (c) => c.primaryKey())
    .addColumn('code_hash', 'varchar(128)', (c) => c.notNull().unique())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('used_at', 'bigint')
    .execute();

  await db.schema
    .createTable('api_keys')
    .addColumn('id', 'varchar(64)', (c) => c.primaryKey())
    .addColumn('name', 'varchar(255)', (c) => c.notNull())
    .addColumn('secret_hash', 'varchar(128)', (c) => c.notNull())
    .addColumn('scopes', 'varchar(255)', (c) => c.notNull())
    .addColumn('created_by', 'varchar(255)', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('expires_at', 'bigint', (c) => c.notNull())
    .addColumn('revoked_at', 'bigint')
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('api_keys').execute();
  await db.schema.dropTable('admin_recovery_codes').execute();
}
