import type { Kysely } from 'kysely';

/**
 * One row that every change to the address space (adding or removing a
 * mailbox or an alias) updates first, inside its transaction: the row lock
 * serialises those changes across processes and database servers, so "is
 * this address free?" and "does this alias close a loop?" are answered on
 * data no one else is changing. `version` counts the changes.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('mail_routing')
    .addColumn('id', 'integer', (c) => c.primaryKey())
    .addColumn('version', 'bigint', (c) => c.notNull().defaultTo(0))
    .execute();
  await (db as Kysely<{ mail_routing: { id: number; version: number } }>).insertInto('mail_routing').values({ id: 1, version: 0 }).execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('mail_routing').execute();
}
