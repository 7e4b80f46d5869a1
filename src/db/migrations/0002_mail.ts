import { PostgresAdapter } from 'kysely';
import type { ColumnDefinitionBuilder, Kysely } from 'kysely';

/**
 * Mail domains, accounts (mailboxes), aliases and mailbox app passwords. The
 * column names are read by Dovecot and Postfix (deploy/), so they are part of
 * the contract with the daemons: change them only together with deploy/.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  const adapter = db.getExecutor().adapter;
  const pg = adapter instanceof PostgresAdapter;
  const idType = pg ? 'serial' : 'integer';
  const id = (c: ColumnDefinitionBuilder) => (pg ? c.primaryKey() : c.primaryKey().autoIncrement());
  const fkType = 'integer';

  await db.schema
    .createTable('domains')
    .addColumn('id', idType, id)
    .addColumn('name', 'varchar(253)', (c) => c.notNull().unique())
    .addColumn('active', 'integer', (c) => c.notNull().defaultTo(1))
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute();

  let accounts = db.schema
    .createTable('accounts')
    .addColumn('id', idType, id)
    .addColumn('domain_id', fkType, (c) => c.notNull().references('domains.id'))
    .addColumn('local_part', 'varchar(64)', (c) => c.notNull())
    .addColumn('address', 'varchar(320)', (c) => c.notNull().unique())
    .addColumn('display_name', 'varchar(255)', (c) => c.notNull().defaultTo(''))
    .addColumn('password_hash', 'varchar(255)', (c) => c.notNull())
    .addColumn('quota_bytes', 'bigint', (c) => c.notNull().defaultTo(0))
    .addColumn('active', 'integer', (c) => c.notNull().defaultTo(1))
    .addColumn('require_app_password', 'integer', (c) => c.notNull().defaultTo(0));
  for (const f of ['burst', 'per_minute', 'per_hour', 'per_day', 'per_week', 'per_month']) {
    accounts = accounts.addColumn(`send_rate_${f}`, 'integer', (c) => c.notNull().defaultTo(0));
  }
  await accounts
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('accounts_domain_id').on('accounts').column('domain_id').execute();

  await db.schema
    .createTable('aliases')
    .addColumn('id', idType, id)
    .addColumn('domain_id', fkType, (c) => c.notNull().references('domains.id'))
    .addColumn('source', 'varchar(320)', (c) => c.notNull().unique())
    .addColumn('destination', 'text', (c) => c.notNull())
    .addColumn('active', 'integer', (c) => c.notNull().defaultTo(1))
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('aliases_domain_id').on('aliases').column('domain_id').execute();

  // An app password is `<id>.<secret>`: looked up by id, then one keyed hash of the
  // secret compared in constant time, whatever the number of app passwords.
  await db.schema
    .createTable('mailbox_app_passwords')
    .addColumn('id', 'varchar(32)', (c) => c.primaryKey())
    .addColumn('account_id', fkType, (c) => c.notNull().references('accounts.id').onDelete('cascade'))
    .addColumn('name', 'varchar(255)', (c) => c.notNull())
    .addColumn('secret_hash', 'varchar(64)', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('expires_at', 'bigint')
    .addColumn('last_used_at', 'bigint')
    .addColumn('last_used_ip', 'varchar(64)')
    .addColumn('revoked_at', 'bigint')
    .execute();
  // Random keys the service needs to stay stable across secret-key rotations
  // (the app-password hash key); their values are sealed like any secret.
  await db.schema
    .createTable('service_keys')
    .addColumn('name', 'varchar(64)', (c) => c.primaryKey())
    .addColumn('value', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute();

  await db.schema.createIndex('mailbox_app_passwords_account_id').on('mailbox_app_passwords').column('account_id').execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  for (const t of ['service_keys', 'mailbox_app_passwords', 'aliases', 'accounts', 'domains']) await db.schema.dropTable(t).execute();
}
