import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createDb } from '../../db/database.js';
import type { Db } from '../../db/database.js';
import { migrateToLatest } from '../../app/schema.js';
import { createTestDatabase } from '../../../test/helpers/dialects.js';
import type { TestDatabase } from '../../../test/helpers/dialects.js';
import { FirewallRepository } from './firewall.repository.js';
import { FirewallService } from './firewall.service.js';
import type { FirewallState } from './rules.js';

/**
 * A forced change reverts unless confirmed. The process that forced it (the
 * API service) may restart inside the window: the next start re-arms the
 * revert for the time left, from the database (SQLite here; the nft side is
 * a recording double — firewall.int.test.ts runs the real nft).
 */
describe('a forced firewall change survives a restart of the service that forced it', () => {
  let tdb: TestDatabase;
  let db: Db;
  let now = 1_800_000_000_000;
  const clock = { now: () => now };
  const applied: FirewallState[] = [];
  const service = () =>
    new FirewallService(new FirewallRepository(db), { apply: (r: FirewallState) => Promise.resolve(void applied.push(r)) }, clock, { revertSeconds: 120, sshPort: 22, apiPort: 8080 });
  const closing = { 'firewall-enabled': 'yes', 'firewall-rules-json': [{ ports: '25', protocol: 'tcp', source: '', enabled: 'yes' }] };

  beforeEach(async () => {
    tdb = await createTestDatabase('sqlite');
    db = createDb(tdb.url);
    await migrateToLatest(db);
    applied.length = 0;
  });
  afterEach(async () => {
    await db.destroy();
    await tdb.drop();
  });

  it('re-arms the revert for the time left; when it fires, the previous state is back', async () => {
    const scheduled: [string, number][] = [];
    const first = service();
    await first.set(closing, { address: '203.0.113.7', via: 'api' }, true, (id, s) => void scheduled.push([id, s]));
    expect(scheduled).toHaveLength(1);
    // The service restarts 50 s later: its timer is gone. The new process re-arms it with 70 s left.
    now += 50_000;
    const again: [string, number][] = [];
    const second = service();
    const id = await second.resumePending((i, s) => void again.push([i, s]));
    expect(again).toEqual([[scheduled[0]?.[0], 70]]);
    expect(id).toBe(scheduled[0]?.[0]);
    expect(await second.revertUnconfirmed(id ?? '')).toBe(true);
    expect(await second.get()).toEqual({ 'firewall-enabled': 'no', 'firewall-rules-json': [] });
    expect(applied).toHaveLength(2);
    // The nft side gets the state itself (the helper renders the table), here the one from before the forced change.
    expect(applied[1]).toEqual({ 'firewall-enabled': 'no', 'firewall-rules-json': [] });
  });

  it('past the deadline it reverts at once (0 s); nothing pending, or confirmed, arms nothing', async () => {
    const s = service();
    expect(await s.resumePending(() => expect.unreachable())).toBeNull();
    await s.set(closing, { address: '203.0.113.7', via: 'api' }, true, () => undefined);
    now += 600_000;
    const late: number[] = [];
    await s.resumePending((_i, secs) => void late.push(secs));
    expect(late).toEqual([0]);
    await s.confirm();
    expect(await s.resumePending(() => expect.unreachable())).toBeNull();
  });
});
