import type { Kysely } from 'kysely';

// Manual bans (the reason mailsvc keeps beside fail2ban's own record) and the
// firewall settings with the state of a forced, not yet confirmed ruleset.
// Stands alone: it uses no table of an earlier migration.
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('bans')
    .addColumn('ip', 'varchar(64)', (c) => c.primaryKey())
    .addColumn('reason', 'varchar(500)', (c) => c.notNull())
    .addColumn('banned_by', 'varchar(255)', (c) => c.notNull())
    .addColumn('banned_at', 'bigint', (c) => c.notNull())
    .execute();

  await db.schema
    .createTable('firewall_settings')
    .addColumn('id', 'integer', (c) => c.primaryKey())
    .addColumn('enabled', 'varchar(3)', (c) => c.notNull())
    .addColumn('rules_json', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .addColumn('pending_id', 'varchar(64)')
    .addColumn('pending_deadline', 'bigint')
    .addColumn('previous_enabled', 'varchar(3)')
    .addColumn('previous_rules_json', 'text')
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('firewall_settings').execute();
  await db.schema.dropTable('bans').execute();
}
