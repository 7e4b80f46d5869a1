import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'kysely';
import { afterEach, describe, expect, it } from 'vitest';
import { DIALECTS, createTestDatabase, dialectAvailable } from '../../../test/helpers/dialects.js';
import type { TestDatabase } from '../../../test/helpers/dialects.js';
import { createDb } from '../../db/database.js';
import type { Db } from '../../db/database.js';
import { migrateToLatest } from '../../app/schema.js';
import { createSnapshotter } from './db-snapshot.js';

/** The update's snapshot against the real servers: rows, changed schema and new tables all go back. */
for (const dialect of DIALECTS) {
  describe(`database snapshot (${dialect})`, async () => {
    const available = await dialectAvailable(dialect);
    let tdb: TestDatabase | undefined;
    let db: Db | undefined;
    let dir: string | undefined;
    afterEach(async () => {
      await db?.destroy();
      await tdb?.drop();
      if (dir) rmSync(dir, { recursive: true, force: true });
    });

    it.skipIf(!available)('restores rows, drops tables made after it and undoes a changed column', async () => {
      tdb = await createTestDatabase(dialect);
      db = createDb(tdb.url);
      await migrateToLatest(db);
      await sql`insert into limits (${sql.ref('key')}, value, updated_at) values ('greylist-delay', '60', 1)`.execute(db);
      dir = mkdtempSync(join(tmpdir(), 'mailsvc-snap-'));
      const snapper = createSnapshotter(dialect, tdb.url);
      const snap = await snapper.take(join(dir, 's'));
      expect(snap.tables).toContain('limits');

      // What a failed update leaves: more rows, a row changed, a new table, a new column.
      await sql`insert into limits (${sql.ref('key')}, value, updated_at) values ('greylist-expire', '99', 2)`.execute(db);
      await sql`update limits set value = '1' where ${sql.ref('key')} = 'greylist-delay'`.execute(db);
      await db.schema.createTable('update_leftover').addColumn('id', 'integer', (c) => c.primaryKey()).execute();
      await db.schema.alterTable('limits').addColumn('extra', 'varchar(10)').execute();
      await sql`insert into kysely_migration (name, timestamp) values ('9999_future', '2030-01-01T00:00:00.000Z')`.execute(db);

      await snapper.restore(snap);
      await db.destroy();
      db = createDb(tdb.url);
      const rows = await sql<{ key: string; value: string }>`select ${sql.ref('key')}, value from limits order by ${sql.ref('key')}`.execute(db);
      expect(rows.rows.filter((r) => r.key.startsWith('greylist'))).toEqual([{ key: 'greylist-delay', value: '60' }]);
      const tables = (await db.introspection.getTables()).map((t) => t.name);
      expect(tables).not.toContain('update_leftover');
      const limitCols = (await db.introspection.getTables()).find((t) => t.name === 'limits')?.columns.map((c) => c.name);
      expect(limitCols).not.toContain('extra');
      const migs = await sql<{ name: string }>`select name from kysely_migration where name = '9999_future'`.execute(db);
      expect(migs.rows).toEqual([]);
    });
  });
}
