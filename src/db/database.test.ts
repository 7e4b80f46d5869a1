import { describe, expect, it, vi } from 'vitest';
import pg from 'pg';
import { sql } from 'kysely';
import { createTestDatabase, dialectAvailable } from '../../test/helpers/dialects.js';
import { POSTGRES_URL } from '../../test/helpers/dialects.js';
import { createDb } from './database.js';

describe('database connections', async () => {
  const available = await dialectAvailable('postgres');

  it.skipIf(!available)('PostgreSQL ending an idle connection does not crash the process; the next query reconnects', async () => {
    const tdb = await createTestDatabase('postgres');
    const db = createDb(tdb.url);
    try {
      await sql`select 1`.execute(db);
      const name = new URL(tdb.url).pathname.slice(1);
      const admin = new pg.Client({ connectionString: POSTGRES_URL });
      await admin.connect();
      // What a server restart does to our idle pooled connection.
      await admin.query('select pg_terminate_backend(pid) from pg_stat_activity where datname = $1 and pid <> pg_backend_pid()', [name]);
      // pg_terminate_backend only signals: wait until the server has really ended it (a condition, up to 30 s).
      await vi.waitFor(async () => {
        const left = await admin.query<{ n: string }>('select count(*) as n from pg_stat_activity where datname = $1 and pid <> pg_backend_pid()', [name]);
        expect(Number(left.rows[0]?.n)).toBe(0);
      }, { timeout: 30_000, interval: 50 });
      await admin.end();
      // The pool hears the closed socket on its next I/O turn; this short pause is only for that local
      // event (the server side is already done), it does not decide pass/fail on a slow machine.
      await new Promise((r) => setTimeout(r, 200));
      const r = await sql<{ one: number }>`select 1 as one`.execute(db);
      expect(r.rows[0]?.one).toBe(1);
    } finally {
      await db.destroy();
      await tdb.drop();
    }
  });
});
