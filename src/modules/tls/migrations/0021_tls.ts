import { PostgresAdapter } from 'kysely';
import type { Kysely } from 'kysely';

// The tls module's tables: what each port served at its last check, and each
// certificate deploy with its proof on the wire.
export async function up(db: Kysely<unknown>): Promise<void> {
  const pg = db.getExecutor().adapter instanceof PostgresAdapter;
  await db.schema
    .createTable('tls_ports')
    // `<kind>:<port>` (imaps:993): one row per port, replaced at each check.
    .addColumn('id', 'varchar(40)', (c) => c.primaryKey())
    .addColumn('kind', 'varchar(16)', (c) => c.notNull())
    .addColumn('port', 'integer', (c) => c.notNull())
    .addColumn('served_sha256', 'varchar(64)')
    .addColumn('subject', 'varchar(500)')
    .addColumn('not_after', 'bigint')
    .addColumn('problem', 'varchar(500)')
    .addColumn('checked_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema
    .createTable('tls_deploys')
    .addColumn('id', pg ? 'serial' : 'integer', (c) => (pg ? c.primaryKey() : c.primaryKey().autoIncrement()))
    .addColumn('cert_name', 'varchar(200)', (c) => c.notNull())
    .addColumn('sha256', 'varchar(64)', (c) => c.notNull())
    .addColumn('ok', 'integer', (c) => c.notNull())
    .addColumn('detail', 'varchar(1000)', (c) => c.notNull())
    .addColumn('ports_json', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('tls_deploys_created').on('tls_deploys').column('created_at').execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('tls_deploys').execute();
  await db.schema.dropTable('tls_ports').execute();
}
