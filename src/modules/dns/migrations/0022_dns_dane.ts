import type { Kysely } from 'kysely';

// The DANE keys of each mail host: the SPKI SHA-256 of the certificate key
// port 25 serves, the next one during a key change, and the step the key
// change stopped at (docs/dns.md, DANE). Public values only: nothing sealed.
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('dane_keys')
    .addColumn('mail_host', 'varchar(253)', (c) => c.primaryKey())
    .addColumn('current_spki', 'varchar(64)', (c) => c.notNull())
    .addColumn('next_spki', 'varchar(64)')
    // idle | publishing-next | awaiting-visibility | waiting-ttl | ready-to-deploy | retiring-old
    .addColumn('state', 'varchar(32)', (c) => c.notNull())
    .addColumn('wait_until', 'bigint')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .addColumn('last_error', 'varchar(1000)')
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('dane_keys').execute();
}
