import { sql } from 'kysely';
import type { Kysely } from 'kysely';

// One counter every revocation of access tokens raises, in the transaction of
// the revocation: each API instance reads it before trusting a token it keeps
// in memory, so a revocation on any instance (or by a host command) holds on
// every other one from its next request. Stands alone.
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('token_generation')
    .addColumn('id', 'integer', (c) => c.primaryKey())
    .addColumn('value', 'bigint', (c) => c.notNull())
    .execute();
  await sql`insert into token_generation (id, value) values (1, 0)`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('token_generation').execute();
}
