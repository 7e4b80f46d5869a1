import { sql } from 'kysely';
import type { Kysely } from 'kysely';

// Table names follow the spec: the admin MFA record, SMS providers, access tokens.
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('admin_mfa')
    .addColumn('id', 'integer', (c) => c.primaryKey())
    .addColumn('totp_enabled', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('totp_secret', 'text')
    .addColumn('totp_confirmed_at', 'bigint')
    .addColumn('totp_last_step', 'bigint')
    .addColumn('sms_enabled', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('sms_phone', 'varchar(32)')
    .addColumn('sms_provider', 'varchar(64)')
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute();

  // The admin MFA record is single: it exists from the start, so writers only update.
  await sql`insert into admin_mfa (id, totp_enabled, sms_enabled, updated_at) values (1, 0, 0, ${Date.now()})`.execute(db);

  await db.schema
    .createTable('sms_providers')
    .addColumn('code', 'varchar(64)', (c) => c.primaryKey())
    .addColumn('enabled', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('base_url', 'varchar(2048)', (c) => c.notNull())
    .addColumn('client_id', 'varchar(1024)')
    .addColumn('client_secret', 'text')
    .addColumn('api_key', 'text')
    .addColumn('send_path', 'varchar(1024)', (c) => c.notNull())
    .addColumn('from_sender', 'varchar(255)')
    .addColumn('route', 'varchar(255)', (c) => c.notNull())
    .addColumn('label', 'varchar(255)')
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute();

  await db.schema
    .createTable('access_tokens')
    .addColumn('id', 'varchar(64)', (c) => c.primaryKey())
    .addColumn('secret_hash', 'varchar(128)', (c) => c.notNull())
    .addColumn('subject', 'varchar(255)', (c) => c.notNull())
    .addColumn('purpose', 'varchar(32)', (c) => c.notNull())
    .addColumn('mfa_verified', 'integer', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('expires_at', 'bigint', (c) => c.notNull())
    .addColumn('revoked_at', 'bigint')
    .execute();
  await db.schema.createIndex('access_tokens_expires_at').on('access_tokens').column('expires_at').execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('access_tokens').execute();
  await db.schema.dropTable('sms_providers').execute();
  await db.schema.dropTable('admin_mfa').execute();
}
