import { PostgresAdapter } from 'kysely';
import type { ColumnDefinitionBuilder, Kysely } from 'kysely';

/**
 * The audit log (one row per state-changing API call or CLI command) and jobs
 * (long work with progress, claimed by one process). Times are epoch
 * milliseconds as everywhere.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  const pg = db.getExecutor().adapter instanceof PostgresAdapter;
  const id = (c: ColumnDefinitionBuilder) => (pg ? c.primaryKey() : c.primaryKey().autoIncrement());

  await db.schema
    .createTable('audit_log')
    .addColumn('id', pg ? 'bigserial' : 'integer', id)
    .addColumn('at', 'bigint', (c) => c.notNull())
    .addColumn('actor', 'varchar(255)', (c) => c.notNull())
    .addColumn('token_id', 'varchar(64)')
    .addColumn('source', 'varchar(64)', (c) => c.notNull())
    .addColumn('action', 'varchar(255)', (c) => c.notNull())
    .addColumn('target', 'varchar(512)')
    .addColumn('summary', 'text', (c) => c.notNull())
    .addColumn('result', 'varchar(64)', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('audit_log_at').on('audit_log').column('at').execute();
  await db.schema.createIndex('audit_log_action').on('audit_log').column('action').execute();

  await db.schema
    .createTable('jobs')
    .addColumn('id', 'varchar(32)', (c) => c.primaryKey())
    .addColumn('kind', 'varchar(64)', (c) => c.notNull())
    .addColumn('state', 'varchar(16)', (c) => c.notNull())
    .addColumn('progress', 'double precision', (c) => c.notNull().defaultTo(0))
    .addColumn('message', 'varchar(1024)', (c) => c.notNull().defaultTo(''))
    .addColumn('input', 'text', (c) => c.notNull())
    .addColumn('result', 'text')
    .addColumn('error', 'varchar(2048)')
    .addColumn('owner', 'varchar(128)')
    .addColumn('heartbeat_at', 'bigint')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('started_at', 'bigint')
    .addColumn('finished_at', 'bigint')
    .execute();
  await db.schema.createIndex('jobs_state').on('jobs').column('state').execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  for (const t of ['jobs', 'audit_log']) await db.schema.dropTable(t).execute();
}
