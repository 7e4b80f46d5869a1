import type { Kysely } from 'kysely';

// DKIM keys (private key sealed), the rotation state of each domain, the DNS
// provider sync settings (API token sealed) and the saved deliverability reports.
// Stands alone: it uses no table of an earlier migration.
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('dkim_keys')
    // `<domain>/<selector>`: the seal's context names the row, so it is known before the insert.
    .addColumn('id', 'varchar(320)', (c) => c.primaryKey())
    .addColumn('domain', 'varchar(253)', (c) => c.notNull())
    .addColumn('selector', 'varchar(63)', (c) => c.notNull())
    .addColumn('algorithm', 'varchar(16)', (c) => c.notNull())
    .addColumn('bits', 'integer', (c) => c.notNull())
    .addColumn('public_key', 'text', (c) => c.notNull())
    .addColumn('private_key', 'text', (c) => c.notNull())
    // pending (made, not yet signing) | active (signing) | retiring (published, not signing) | retired
    .addColumn('state', 'varchar(16)', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('activated_at', 'bigint')
    .addColumn('retired_at', 'bigint')
    .execute();
  await db.schema.createIndex('dkim_keys_domain').on('dkim_keys').columns(['domain', 'state']).execute();

  await db.schema
    .createTable('dkim_rotations')
    .addColumn('domain', 'varchar(253)', (c) => c.primaryKey())
    .addColumn('step', 'varchar(32)', (c) => c.notNull())
    .addColumn('new_selector', 'varchar(63)', (c) => c.notNull())
    .addColumn('old_selector', 'varchar(63)')
    .addColumn('wait_until', 'bigint')
    .addColumn('started_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .addColumn('last_error', 'varchar(1000)')
    .execute();

  await db.schema
    .createTable('dns_sync')
    .addColumn('domain', 'varchar(253)', (c) => c.primaryKey())
    .addColumn('provider', 'varchar(32)', (c) => c.notNull())
    .addColumn('zone_id', 'varchar(64)', (c) => c.notNull())
    .addColumn('api_token', 'text', (c) => c.notNull())
    .addColumn('enabled', 'integer', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .addColumn('last_sync_at', 'bigint')
    .execute();

  await db.schema
    .createTable('deliverability_reports')
    .addColumn('id', 'varchar(64)', (c) => c.primaryKey())
    .addColumn('domain', 'varchar(253)', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('failed', 'integer', (c) => c.notNull())
    .addColumn('report_json', 'text', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('deliverability_reports_domain').on('deliverability_reports').columns(['domain', 'created_at']).execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('deliverability_reports').execute();
  await db.schema.dropTable('dns_sync').execute();
  await db.schema.dropTable('dkim_rotations').execute();
  await db.schema.dropTable('dkim_keys').execute();
}
