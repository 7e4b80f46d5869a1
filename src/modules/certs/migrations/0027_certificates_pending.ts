import type { Kysely } from 'kysely';

// A certificate with a new key for the mail host waits for its DANE record (docs/certs.md "DANE").
// 0024-0026 are taken by work merged or in flight beside this one; numbers have gaps.
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('certificates').addColumn('pending_chain_pem', 'text').execute();
  await db.schema.alterTable('certificates').addColumn('pending_private_key', 'text').execute();
  await db.schema.alterTable('certificates').addColumn('pending_names', 'text').execute();
  await db.schema.alterTable('certificates').addColumn('pending_since', 'bigint').execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  for (const c of ['pending_since', 'pending_names', 'pending_private_key', 'pending_chain_pem']) await db.schema.alterTable('certificates').dropColumn(c).execute();
}
