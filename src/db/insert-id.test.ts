import { describe, expect, it } from 'vitest';
import { DIALECTS, createTestDatabase, dialectAvailable } from '../../test/helpers/dialects.js';
import { migrateToLatest } from '../app/schema.js';
import { createDb } from './database.js';
import { dialectOf } from './dialect.js';
import { insertedId } from './insert-id.js';

for (const dialect of DIALECTS) {
  describe(`the id of an inserted row (${dialect})`, async () => {
    const available = await dialectAvailable(dialect);

    it.skipIf(!available)('is the id the database gave the row, for each of several inserts', async () => {
      const tdb = await createTestDatabase(dialect);
      const db = createDb(tdb.url);
      try {
        await migrateToLatest(db);
        const ids: number[] = [];
        for (const name of ['a.example', 'b.example', 'c.example']) {
          ids.push(await insertedId(dialectOf(tdb.url), db.insertInto('domains').values({ name, active: 1, created_at: 1, updated_at: 1 })));
        }
        const rows = await db.selectFrom('domains').select(['id', 'name']).orderBy('name').execute();
        expect(rows.map((r) => [Number(r.id), r.name])).toEqual([[ids[0], 'a.example'], [ids[1], 'b.example'], [ids[2], 'c.example']]);
        expect(new Set(ids).size).toBe(3);
      } finally {
        await db.destroy();
        await tdb.drop();
      }
    });
  });
}
