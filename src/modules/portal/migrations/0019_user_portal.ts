import type { Kysely } from 'kysely';

// The user portal's tables. No foreign keys into the accounts and domains
// modules' tables: the rows go with their account through account.deleting.
export async function up(db: Kysely<unknown>): Promise<void> {
  // Sessions: the cookie's 256 random bits are kept only as their SHA-256.
  await db.schema
    .createTable('portal_sessions')
    .addColumn('id_hash', 'varchar(64)', (c) => c.primaryKey())
    .addColumn('account_id', 'integer', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('last_seen_at', 'bigint', (c) => c.notNull())
    .addColumn('expires_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('portal_sessions_account').on('portal_sessions').column('account_id').execute();
  // A mailbox's own TOTP: the secret sealed, confirmed once a code was given, the last step used (no replay).
  await db.schema
    .createTable('portal_totp')
    .addColumn('account_id', 'integer', (c) => c.primaryKey())
    .addColumn('secret_sealed', 'varchar(512)', (c) => c.notNull())
    .addColumn('confirmed', 'integer', (c) => c.notNull())
    .addColumn('last_step', 'bigint', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute();
  // Forwarding and the out-of-office reply, as the user set them (the Sieve script is rendered from these).
  await db.schema
    .createTable('portal_mail_rules')
    .addColumn('account_id', 'integer', (c) => c.primaryKey())
    .addColumn('rules', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute();
  // Self-service switched off by the administrator: kind 'domain' (name) or 'mailbox' (address).
  await db.schema
    .createTable('portal_disabled')
    .addColumn('kind', 'varchar(16)', (c) => c.notNull())
    .addColumn('name', 'varchar(320)', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addPrimaryKeyConstraint('portal_disabled_pk', ['kind', 'name'])
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  for (const t of ['portal_disabled', 'portal_mail_rules', 'portal_totp', 'portal_sessions']) await db.schema.dropTable(t).execute();
}
