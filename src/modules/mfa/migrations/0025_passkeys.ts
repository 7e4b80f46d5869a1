import type { Kysely } from 'kysely';

// The administrator's passkeys (WebAuthn credentials), and the two passkey
// settings an administrator changes at run time, beside the other factors in
// admin_mfa (null: the MAILSVC_WEBAUTHN_* default holds). Stands alone.
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('admin_passkeys')
    .addColumn('id', 'varchar(32)', (c) => c.primaryKey())
    // A credential ID may be up to 1023 bytes: the unique index is on its SHA-256.
    .addColumn('credential_hash', 'varchar(64)', (c) => c.notNull().unique())
    .addColumn('credential_id', 'text', (c) => c.notNull())
    .addColumn('public_key', 'text', (c) => c.notNull())
    .addColumn('counter', 'bigint', (c) => c.notNull())
    .addColumn('transports', 'varchar(255)', (c) => c.notNull())
    .addColumn('backed_up', 'integer', (c) => c.notNull())
    .addColumn('device_type', 'varchar(32)', (c) => c.notNull())
    .addColumn('aaguid', 'varchar(36)', (c) => c.notNull())
    .addColumn('name', 'varchar(64)', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('last_used_at', 'bigint')
    .execute();
  await db.schema.alterTable('admin_mfa').addColumn('webauthn_user_id', 'varchar(64)').execute();
  await db.schema.alterTable('admin_mfa').addColumn('passkey_passwordless', 'integer').execute();
  await db.schema.alterTable('admin_mfa').addColumn('passkey_required', 'varchar(8)').execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('admin_mfa').dropColumn('passkey_required').execute();
  await db.schema.alterTable('admin_mfa').dropColumn('passkey_passwordless').execute();
  await db.schema.alterTable('admin_mfa').dropColumn('webauthn_user_id').execute();
  await db.schema.dropTable('admin_passkeys').execute();
}
