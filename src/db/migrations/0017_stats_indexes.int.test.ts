import { afterAll, describe, expect, it } from 'vitest';
import { sql } from 'kysely';
import type { Migration } from 'kysely';
import { createDb } from '../database.js';
import type { Db, DialectName } from '../database.js';
import { migrateToLatest } from '../../app/schema.js';
import { DIALECTS, createTestDatabase, dialectAvailable } from '../../../test/helpers/dialects.js';
import type { TestDatabase } from '../../../test/helpers/dialects.js';
import * as m0017 from './0017_stats_indexes.js';

// dialectAvailable prints why a dialect's tests skip (and fails under MAILSVC_TEST_REQUIRE_SERVICES=1).

/** Migration 0017 on each database: up leaves the covering time index and the mailbox one; down brings back the two it replaced. */
async function indexes(db: Db, dialect: DialectName): Promise<string[]> {
  const q =
    dialect === 'sqlite'
      ? sql<{ name: string }>`select name from sqlite_master where type = 'index' and tbl_name = 'stats_messages' and sql is not null`
      : dialect === 'postgres'
        ? sql<{ name: string }>`select indexname as name from pg_indexes where tablename = 'stats_messages' and indexname <> 'stats_messages_pk'`
        : sql<{ name: string }>`select distinct index_name as name from information_schema.statistics where table_schema = database() and table_name = 'stats_messages' and index_name <> 'PRIMARY'`;
  return (await q.execute(db)).rows.map((r) => r.name).sort();
}

for (const dialect of DIALECTS) {
  describe(`migration 0017_stats_indexes (${dialect})`, async () => {
    const available = await dialectAvailable(dialect);
    let tdb: TestDatabase | undefined;
    let db: Db | undefined;
    afterAll(async () => {
      await db?.destroy();
      await tdb?.drop();
    });

    it.skipIf(!available)('up: (at, direction, size) and (mailbox, at); down: (at), (direction, at) and (mailbox, at) again', async () => {
      tdb = await createTestDatabase(dialect);
      db = createDb(tdb.url);
      await migrateToLatest(db);
      expect(await indexes(db, dialect)).toEqual(['stats_messages_at_direction_size', 'stats_messages_mailbox_at']);
      await db.insertInto('stats_messages').values({ msg_key: 'k1', mailbox: 'a@example.org', direction: 'inbound', size: 10, at: 1 }).execute();
      await (m0017 as Migration).down?.(db as never);
      expect(await indexes(db, dialect)).toEqual(['stats_messages_at', 'stats_messages_direction_at', 'stats_messages_mailbox_at']);
      await (m0017 as Migration).up(db as never);
      expect(await indexes(db, dialect)).toEqual(['stats_messages_at_direction_size', 'stats_messages_mailbox_at']);
      expect(await db.selectFrom('stats_messages').select('msg_key').execute()).toEqual([{ msg_key: 'k1' }]);
    });
  });
}
