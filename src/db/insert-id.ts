import { sql } from 'kysely';
import type { InsertQueryBuilder, InsertResult } from 'kysely';
import type { DialectName } from './dialect.js';

/**
 * The id of the row an insert made into a table whose `id` the database
 * numbers (`serial` on PostgreSQL, autoincrement elsewhere), the same on every
 * dialect: PostgreSQL answers it through RETURNING, which MariaDB does not
 * have; SQLite and MariaDB give the driver's insert id, which PostgreSQL does
 * not. (An id the service makes itself, known before the insert, needs none
 * of this.)
 */
export async function insertedId<DB, TB extends keyof DB>(dialect: DialectName, insert: InsertQueryBuilder<DB, TB, InsertResult>): Promise<number> {
  if (dialect === 'postgres') {
    const row = (await insert.returning(sql<number | string>`id`.as('id')).executeTakeFirstOrThrow()) as { id: number | string };
    return Number(row.id);
  }
  const { insertId } = await insert.executeTakeFirstOrThrow();
  if (insertId === undefined) throw new Error('the database driver reported no insert id');
  return Number(insertId);
}
