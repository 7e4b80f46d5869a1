import type { Kysely } from 'kysely';

// The certs module's tables (docs/certs.md). 0019-0022 are taken by work merged or in
// flight beside this one (portal, tls, DANE); numbers have gaps.
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('certificates')
    .addColumn('name', 'varchar(64)', (c) => c.primaryKey())
    .addColumn('names', 'text', (c) => c.notNull())
    .addColumn('chain_pem', 'text')
    .addColumn('private_key', 'text')
    .addColumn('serial', 'varchar(128)')
    .addColumn('sha256', 'varchar(64)')
    .addColumn('not_before', 'bigint')
    .addColumn('not_after', 'bigint')
    .addColumn('ari_start', 'bigint')
    .addColumn('ari_end', 'bigint')
    .addColumn('ari_next_check', 'bigint')
    .addColumn('issued_at', 'bigint')
    .addColumn('revoked_at', 'bigint')
    .addColumn('last_attempt_at', 'bigint')
    .addColumn('last_error', 'varchar(1000)')
    .addColumn('failures', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('next_attempt_at', 'bigint')
    .addColumn('proof', 'text')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema
    .createTable('acme_accounts')
    .addColumn('id', 'varchar(32)', (c) => c.primaryKey())
    .addColumn('directory_url', 'varchar(500)', (c) => c.notNull())
    .addColumn('account_key', 'text', (c) => c.notNull())
    .addColumn('account_url', 'varchar(500)')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('acme_accounts').execute();
  await db.schema.dropTable('certificates').execute();
}
