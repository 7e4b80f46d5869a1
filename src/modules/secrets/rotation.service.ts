import { sql } from 'kysely';
import type { Db } from '../../db/database.js';
import { SEALED_COLUMNS, sealContext } from '../../db/sealed-columns.js';
import type { SecretBox } from '../../shared/secret-box.js';

export type ResealResult = { key_id: string; resealed: number; already_current: number };

/**
 * Opens every sealed value with whichever key sealed it and seals it again
 * under the box's primary key, in one transaction: either every value moves
 * to the new key or none does.
 */
export async function resealAll(db: Db, box: SecretBox): Promise<ResealResult> {
  let resealed = 0;
  let current = 0;
  await db.transaction().execute(async (tx) => {
    for (const { table, key, column } of SEALED_COLUMNS) {
      const rows = await sql<{ k: string | number; v: string | null }>`select ${sql.ref(key)} as k, ${sql.ref(column)} as v from ${sql.table(table)}`.execute(tx);
      for (const { k, v } of rows.rows) {
        if (v === null) continue;
        if (box.sealedWith(v) === box.keyId) {
          current += 1;
          continue;
        }
        const context = sealContext(table, k, column);
        const next = box.seal(box.open(v, context), context);
        await sql`update ${sql.table(table)} set ${sql.ref(column)} = ${next} where ${sql.ref(key)} = ${k}`.execute(tx);
        resealed += 1;
      }
    }
  });
  return { key_id: box.keyId, resealed, already_current: current };
}
