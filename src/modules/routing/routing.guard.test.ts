import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createDb } from '../../db/database.js';
import type { Db } from '../../db/database.js';
import { migrateToLatest } from '../../app/schema.js';
import { AppError } from '../../shared/errors.js';
import { createTestDatabase, dialectAvailable } from '../../../test/helpers/dialects.js';
import type { TestDatabase } from '../../../test/helpers/dialects.js';
import { RoutingGuard } from './routing.guard.js';
import type { RoutingChecks } from './routing.guard.js';

/**
 * Two processes (here: two connection pools) change the address space at the
 * same moment. Each change checks, then waits up to 400 ms for the other to
 * have checked too, then writes: without the routing lock both would check
 * before either wrote, and both writes would land. PostgreSQL and MariaDB
 * only: SQLite's writers already queue on its database-wide write lock, which
 * the guard's first statement takes, and one Node process cannot hold two
 * blocking SQLite connections against each other.
 */
type Change = (tx: Db, r: RoutingChecks, checked: () => Promise<void>) => Promise<void>;

for (const dialect of ['postgres', 'mysql'] as const) {
  describe(`the routing lock serialises concurrent changes (${dialect})`, async () => {
    const available = await dialectAvailable(dialect);
    let tdb: TestDatabase;
    let dbs: [Db, Db];
    let domainId: number;
    const now = Date.now();
    beforeEach(async () => {
      if (!available) return;
      tdb = await createTestDatabase(dialect);
      dbs = [createDb(tdb.url), createDb(tdb.url)];
      await migrateToLatest(dbs[0]);
      await dbs[0].insertInto('domains').values({ name: 'example.org', active: 1, created_at: now, updated_at: now }).execute();
      domainId = (await dbs[0].selectFrom('domains').select('id').executeTakeFirstOrThrow()).id;
    });
    afterEach(async () => {
      if (!available) return;
      await Promise.all(dbs.map((d) => d.destroy()));
      await tdb.drop();
    });

    /**
     * Runs both changes at once, each on its own pool; `checked()` waits until the other has checked too
     * (at most 400 ms). The limit is for what must NOT happen: with the guard working, the other change
     * cannot check until this one commits, so the wait runs out; its length never decides pass/fail.
     */
    function race(first: Change, second: Change) {
      let checked = 0;
      const meet = async () => {
        checked += 1;
        for (const deadline = Date.now() + 400; checked < 2 && Date.now() < deadline; ) await new Promise((r) => setTimeout(r, 10));
      };
      return Promise.allSettled([
        new RoutingGuard(dbs[0]).change((tx, r) => first(tx, r, meet)),
        new RoutingGuard(dbs[1]).change((tx, r) => second(tx, r, meet)),
      ]);
    }
    const aliasRow = (source: string, destination: string) => ({ domain_id: domainId, source, destination, active: 1, created_at: now, updated_at: now });

    it.skipIf(!available)('a mailbox and an alias created at once for one address: exactly one of them is written', async () => {
      const address = 'alice@example.org';
      const results = await race(
        async (tx, r, checked) => {
          if ((await r.addressUse(address)) !== null) throw new AppError('conflict', 'taken');
          await checked();
          await tx.insertInto('accounts').values({
            domain_id: domainId, local_part: 'alice', address, display_name: '', password_hash: 'x', quota_bytes: 0, active: 1, require_app_password: 0,
            send_rate_burst: 0, send_rate_per_minute: 0, send_rate_per_hour: 0, send_rate_per_day: 0, send_rate_per_week: 0, send_rate_per_month: 0,
            created_at: now, updated_at: now,
          }).execute();
        },
        async (tx, r, checked) => {
          if ((await r.addressUse(address)) !== null) throw new AppError('conflict', 'taken');
          await checked();
          await tx.insertInto('aliases').values(aliasRow(address, 'bob@example.net')).execute();
        },
      );
      expect(results.map((r) => r.status).sort()).toEqual(['fulfilled', 'rejected']);
      const accounts = await dbs[0].selectFrom('accounts').select('id').execute();
      const aliases = await dbs[0].selectFrom('aliases').select('id').execute();
      expect(accounts.length + aliases.length).toBe(1);
    });

    it.skipIf(!available)('a → b and b → a created at once: the second is refused as a loop', async () => {
      const add = (source: string, destination: string): Change => async (tx, r, checked) => {
        await r.refuseLoop(source, [destination]);
        await checked();
        await tx.insertInto('aliases').values(aliasRow(source, destination)).execute();
      };
      const results = await race(add('a@example.org', 'b@example.org'), add('b@example.org', 'a@example.org'));
      expect(results.map((r) => r.status).sort()).toEqual(['fulfilled', 'rejected']);
      const refused = results.find((r) => r.status === 'rejected');
      expect(String((refused as PromiseRejectedResult).reason)).toMatch(/Alias loop/);
      expect(await dbs[0].selectFrom('aliases').select('source').execute()).toHaveLength(1);
    });
  });
}
