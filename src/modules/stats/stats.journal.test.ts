import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createDb } from '../../db/database.js';
import type { Db } from '../../db/database.js';
import { migrateToLatest } from '../../app/schema.js';
import { AppError } from '../../shared/errors.js';
import { createTestDatabase } from '../../../test/helpers/dialects.js';
import type { TestDatabase } from '../../../test/helpers/dialects.js';
import { FakeClock } from '../../../test/helpers/app.js';
import { REPO_ROOT } from '../../../test/helpers/cli.js';
import { FakeJournalctl, asJournalLines } from '../../../test/helpers/fake-journalctl.js';
import { StatsRepository } from './stats.repository.js';
import { StatsService, cursorTime } from './stats.service.js';

/**
 * `stats collect` without a mail log file reads the journal: where it stops
 * (the cursor, kept apart from a file's position), a run with nothing new, a
 * vacuumed cursor, a cursor journalctl refuses, and journalctl missing or not
 * allowed to read. journalctl is a fake on PATH (test/helpers/fake-journalctl.ts)
 * printing the test Postfix's real lines as `journalctl -o short-iso-precise`
 * does: these tests are of the logic around the journal, not of journald.
 */

const YEAR = new Date().getFullYear();
const LINES = asJournalLines(readFileSync(join(REPO_ROOT, 'test/fixtures/stats/postfix-real.log'), 'utf8'), YEAR);
const at = (h: number, m: number, s: number) => Date.UTC(YEAR, 10, 23, h, m, s);
// The fixture's three messages: alice to bob (local), alice to a remote address (outbound), a stranger to alice (inbound).
const LOCAL = { mailbox: 'bob@example.org', direction: 'local', size: 490, at: at(15, 49, 33) };
const OUTBOUND = { mailbox: 'alice@example.org', direction: 'outbound', size: 2387, at: at(15, 49, 34) };
const INBOUND = { mailbox: 'alice@example.org', direction: 'inbound', size: 897, at: at(15, 49, 34) };

describe('stats collect from the journal (a fake journalctl)', () => {
  let tdb: TestDatabase;
  let db: Db;
  let dir: string;
  let fake: FakeJournalctl;
  const path = process.env.PATH;
  const clock = new FakeClock(Date.UTC(YEAR, 10, 24));
  const service = (log = join(dir, 'mail.log')) => new StatsService(new StatsRepository(db, 'sqlite'), clock, log, () => 3650);
  const stored = async () =>
    (await db.selectFrom('stats_messages').select(['mailbox', 'direction', 'size', 'at']).orderBy('size').execute()).map((r) => ({ ...r, size: Number(r.size), at: Number(r.at) }));
  const state = async () => JSON.parse((await db.selectFrom('stats_collector').select('state_json').executeTakeFirstOrThrow()).state_json) as Record<string, unknown>;
  const setState = async (json: unknown) => {
    await db.deleteFrom('stats_collector').execute();
    await db.insertInto('stats_collector').values({ id: 1, state_json: JSON.stringify(json), updated_at: 0 }).execute();
  };

  beforeAll(async () => {
    tdb = await createTestDatabase('sqlite');
    db = createDb(tdb.url);
    await migrateToLatest(db);
  });
  afterAll(async () => {
    await db?.destroy();
    await tdb?.drop();
  });
  beforeEach(async () => {
    await db.deleteFrom('stats_messages').execute();
    await db.deleteFrom('stats_collector').execute();
    dir = mkdtempSync(join(tmpdir(), 'mailsvc-stats-journal-'));
    fake = new FakeJournalctl();
    process.env.PATH = `${fake.dir}:${path ?? ''}`;
  });
  afterEach(() => {
    process.env.PATH = path;
    fake.remove();
    rmSync(dir, { recursive: true, force: true });
  });

  it('without a mail log it reads the mail facility from the journal, resumes at its cursor, and counts a message split over runs once', async () => {
    fake.append(LINES.slice(0, 16));
    const first = await service().collect();
    expect(first).toEqual({ files_read: [], journal: { from: 'beginning', lines: 16 }, lines: 16, rows_added: 1, rows_pruned: 0, open_messages: 1 });
    expect(fake.calls()[0]).toEqual(['--no-pager', '--utc', '--output=short-iso-precise', '--show-cursor', 'SYSLOG_FACILITY=2']);
    const saved = (await state()).journal as { cursor: string; last: string };
    expect(saved.cursor).toMatch(/;i=10f;/);
    // The position of a file stays its own field: nothing was read from a file.
    expect((await state()).position).toBeNull();

    const again = await service().collect();
    expect(again).toMatchObject({ journal: { from: 'cursor', lines: 0 }, lines: 0, rows_added: 0, open_messages: 1 });
    expect(fake.calls()[1]).toContain(`--cursor=${saved.cursor}`);

    // The rest of the second message (its delivery and `removed`) arrives: completed with its sender from the saved state.
    fake.append(LINES.slice(16, 20));
    expect(await service().collect()).toMatchObject({ journal: { from: 'cursor', lines: 4 }, rows_added: 1, open_messages: 0 });
    expect(await stored()).toEqual([LOCAL, OUTBOUND]);
  });

  it('a vacuumed cursor loses nothing after it: the first entry left is read, not skipped (journalctl --after-cursor would skip it)', async () => {
    fake.append(LINES.slice(0, 20));
    expect(await service().collect()).toMatchObject({ rows_added: 2 });
    // The third message's from=, delivery and removed are the first entries left once everything up to them is vacuumed.
    fake.append(LINES.slice(20));
    fake.vacuum(23);
    const r = await service().collect();
    expect(r).toMatchObject({ journal: { from: 'cursor-gone', lines: 3 }, lines: 3, rows_added: 1, open_messages: 0 });
    expect(await stored()).toEqual([LOCAL, INBOUND, OUTBOUND]);
    expect(await service().collect()).toMatchObject({ journal: { from: 'cursor', lines: 0 }, rows_added: 0 });
  });

  it('a cursor journalctl cannot seek to: everything there is is read again, and stored rows are not counted twice', async () => {
    fake.append(LINES);
    expect(await service().collect()).toMatchObject({ rows_added: 3 });
    await setState({ ...(await state()), journal: { cursor: 'not-a-cursor', last: 'x' } });
    const r = await service().collect();
    expect(r).toMatchObject({ journal: { from: 'cursor-gone', lines: LINES.length }, rows_added: 0 });
    expect(await stored()).toEqual([LOCAL, INBOUND, OUTBOUND]);
    expect(((await state()).journal as { cursor: string }).cursor).toMatch(/;i=119;/);
  });

  it('a state saved before the journal was read (a file position and open messages, no journal) keeps working; each source keeps its own position', async () => {
    const position = { head: 'a'.repeat(64), headLength: 1024, offset: 4096 };
    // An older version's state: the second message's first lines were read from a file that is gone now.
    await setState({ position, pending: { '1385920C66F': { ours: true, at: OUTBOUND.at, sender: 'alice@example.org', size: 2387, local: [], remote: false, seen: OUTBOUND.at } } });
    fake.append(LINES.slice(16, 20));
    expect(await service().collect()).toMatchObject({ journal: { from: 'beginning', lines: 4 }, rows_added: 1 });
    expect(await stored()).toEqual([OUTBOUND]);
    const s = await state();
    expect(s.position).toEqual(position);
    expect(s.journal).toMatchObject({ cursor: expect.stringMatching(/;i=103;/) });

    // A mail log file again (rsyslog installed): read as a file; the journal's position is kept for later.
    writeFileSync(join(dir, 'mail.log'), readFileSync(join(REPO_ROOT, 'test/fixtures/stats/postfix-real.log')));
    const calls = fake.calls().length;
    expect(await service().collect()).toMatchObject({ files_read: [join(dir, 'mail.log')], journal: null, rows_added: 2 });
    expect(fake.calls()).toHaveLength(calls);
    expect((await state()).journal).toEqual(s.journal);
    // MAILSVC_MAIL_LOG=journal reads the journal although the file is there.
    expect(await service('journal').collect()).toMatchObject({ files_read: [], journal: { from: 'cursor', lines: 0 } });
  });

  it('journalctl not allowed to read the system journal: an error naming the groups, nothing stored, the position kept', async () => {
    fake.append(LINES.slice(0, 12));
    await service().collect();
    const before = await state();
    for (const mode of ['denied', 'denied-hint'] as const) {
      fake.setMode(mode);
      fake.append(LINES.slice(12));
      const err = await service().collect().then(() => null, (e: unknown) => e);
      expect(err).toBeInstanceOf(AppError);
      expect((err as AppError).code).toBe('unavailable');
      expect((err as AppError).detail).toMatch(/cannot read the systemd journal as this user .*insufficient permissions|not seeing messages/);
      expect((err as AppError).detail).toMatch(/group adm or systemd-journal/);
      expect(await state()).toEqual(before);
      expect(await stored()).toEqual([LOCAL]);
    }
  });

  it('no journal here (no files) is no source at all; journalctl missing is an error naming MAILSVC_MAIL_LOG', async () => {
    fake.setMode('no-files');
    expect(await service().collect()).toEqual({ files_read: [], journal: null, lines: 0, rows_added: 0, rows_pruned: 0, open_messages: 0 });
    process.env.PATH = dir;
    const err = await service().collect().then(() => null, (e: unknown) => e);
    expect((err as AppError).detail).toMatch(/journalctl is not installed here.*set MAILSVC_MAIL_LOG/);
  });

  it('reads the time a cursor carries (for progress)', () => {
    expect(cursorTime('s=5f9f;i=15e;b=b52d;m=77f6d109;t=6612c649da9fd;x=30c8')).toBe(Math.floor(0x6612c649da9fd / 1000));
    expect(cursorTime('s=5f9f;i=15e')).toBeNull();
  });
});
