import type { Kysely } from 'kysely';

// Server-side sessions of the web panel. The browser holds only a random id;
// the row keys it by its SHA-256 and keeps the access token the sign-in earned,
// sealed. Stands alone: it uses no table of another migration.
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('panel_sessions')
    .addColumn('id_hash', 'varchar(64)', (c) => c.primaryKey())
    .addColumn('token_sealed', 'varchar(1024)', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('last_seen_at', 'bigint', (c) => c.notNull())
    .addColumn('expires_at', 'bigint', (c) => c.notNull())
    .addColumn('fresh_until', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('panel_sessions_expires').on('panel_sessions').column('expires_at').execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('panel_sessions').execute();
}
