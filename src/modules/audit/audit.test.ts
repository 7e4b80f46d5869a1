import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import pino from 'pino';
import { Writable } from 'node:stream';
import { createDb } from '../../db/database.js';
import type { Db } from '../../db/database.js';
import { migrateToLatest } from '../../app/schema.js';
import { DIALECTS, createTestDatabase, dialectAvailable } from '../../../test/helpers/dialects.js';
import type { TestDatabase } from '../../../test/helpers/dialects.js';
import { FakeClock } from '../../../test/helpers/app.js';
import { AuditRepository } from './audit.repository.js';
import { AuditService } from './audit.service.js';
import type { AuditRecord } from './index.js';

const DAY = 86_400_000;
const rec = (over: Partial<AuditRecord> = {}): AuditRecord => ({
  actor: 'admin', tokenId: 'tok1', source: '192.0.2.1', action: 'POST /domains', target: 'example.org', summary: { name: 'example.org' }, result: 'ok', ...over,
});

for (const dialect of DIALECTS) {
  describe(`audit log storage (${dialect})`, async () => {
    const available = await dialectAvailable(dialect);
    let tdb: TestDatabase;
    let db: Db;
    let clock: FakeClock;
    let logs: string[];
    const make = (retentionDays = 365) => {
      const sink = new Writable({ write: (c: Buffer, _e, cb) => (logs.push(c.toString()), cb()) });
      return new AuditService(new AuditRepository(db), clock, pino({ level: 'info' }, sink), retentionDays);
    };
    beforeEach(async () => {
      if (!available) return;
      tdb = await createTestDatabase(dialect);
      db = createDb(tdb.url);
      await migrateToLatest(db);
      clock = new FakeClock(Date.parse('2026-06-01T12:00:00Z'));
      logs = [];
    });
    afterEach(async () => {
      await db?.destroy().catch(() => undefined);
      await tdb?.drop();
    });

    it.skipIf(!available)('records every field and lists newest first with the page shape', async () => {
      const audit = make();
      expect(await audit.record(rec())).toBe(true);
      clock.advance(1000);
      await audit.record(rec({ actor: 'root', tokenId: null, source: 'cli', action: 'cli: domains delete', target: null, summary: { n: 1, b: true, z: null }, result: 'conflict' }));
      const page = await audit.list({}, { limit: 50, offset: 0 });
      expect(page).toMatchObject({ total: 2, limit: 50, offset: 0 });
      expect(page.items[0]).toMatchObject({ at: '2026-06-01T12:00:01.000Z', actor: 'root', token_id: null, source: 'cli', action: 'cli: domains delete', target: null, summary: { n: 1, b: true, z: null }, result: 'conflict' });
      expect(page.items[1]).toMatchObject({ at: '2026-06-01T12:00:00.000Z', actor: 'admin', token_id: 'tok1', source: '192.0.2.1', action: 'POST /domains', target: 'example.org', summary: { name: 'example.org' }, result: 'ok' });
      expect(page.items[0]!.id).toBeGreaterThan(page.items[1]!.id);
    });

    it.skipIf(!available)('filters by action, target and time (from inclusive, to exclusive) and pages', async () => {
      const audit = make();
      for (let i = 0; i < 7; i++) {
        await audit.record(rec({ action: i % 2 === 0 ? 'POST /domains' : 'DELETE /domains/:domain', target: `d${i}.org`, actor: i < 2 ? 'root' : 'admin' }));
        clock.advance(60_000);
      }
      const t0 = Date.parse('2026-06-01T12:00:00Z');
      expect((await audit.list({ action: 'DELETE /domains/:domain' }, { limit: 50, offset: 0 })).items.map((e) => e.target)).toEqual(['d5.org', 'd3.org', 'd1.org']);
      expect((await audit.list({ target: 'd4.org' }, { limit: 50, offset: 0 })).total).toBe(1);
      // Who made the change, exactly (and with the other filters).
      expect((await audit.list({ actor: 'root' }, { limit: 50, offset: 0 })).items.map((e) => e.target)).toEqual(['d1.org', 'd0.org']);
      expect((await audit.list({ actor: 'root', action: 'POST /domains' }, { limit: 50, offset: 0 })).items.map((e) => e.target)).toEqual(['d0.org']);
      expect((await audit.list({ actor: 'roo' }, { limit: 50, offset: 0 })).total).toBe(0);
      const window = await audit.list({ from: t0 + 2 * 60_000, to: t0 + 5 * 60_000 }, { limit: 50, offset: 0 });
      expect(window.items.map((e) => e.target)).toEqual(['d4.org', 'd3.org', 'd2.org']);
      const p2 = await audit.list({}, { limit: 3, offset: 3 });
      expect(p2).toMatchObject({ total: 7, limit: 3, offset: 3 });
      expect(p2.items.map((e) => e.target)).toEqual(['d3.org', 'd2.org', 'd1.org']);
      expect((await audit.list({ action: 'POST /domains', from: t0 + 3 * 60_000 }, { limit: 1, offset: 1 })).items.map((e) => e.target)).toEqual(['d4.org']);
    });

    it.skipIf(!available)('retention: prune deletes what is older than the retention days; a write prunes at most once an hour', async () => {
      const audit = make(30);
      const targets = async () => (await audit.list({}, { limit: 50, offset: 0 })).items.map((e) => e.target);
      await audit.record(rec({ target: 'a' })); // t0; the first write prunes (nothing to delete)
      clock.advance(30 * DAY - 10 * 60_000);
      await audit.record(rec({ target: 'b' })); // prunes again: 'a' is not yet 30 days old
      clock.advance(30 * 60_000);
      await audit.record(rec({ target: 'c' })); // 'a' is now expired, but the last prune ran 30 minutes ago
      expect(await targets()).toEqual(['c', 'b', 'a']);
      clock.advance(40 * 60_000);
      await audit.record(rec({ target: 'd' })); // 70 minutes since the last prune: 'a' goes
      expect(await targets()).toEqual(['d', 'c', 'b']);
      expect(await audit.prune()).toMatchObject({ deleted: 0 });
      clock.advance(30 * DAY - 30 * 60_000);
      expect(await audit.prune()).toEqual({ deleted: 2, before: new Date(clock.now() - 30 * DAY).toISOString() });
      expect(await targets()).toEqual(['d']);
    });

    it.skipIf(!available)('a failing write is logged and never thrown', async () => {
      const audit = make();
      await db.schema.dropTable('audit_log').execute();
      await expect(audit.record(rec())).resolves.toBe(false);
      expect(logs.join('')).toContain('audit record could not be written');
    });
  });
}
