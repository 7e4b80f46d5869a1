import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { execFileSync } from 'node:child_process';
import { appendFileSync, mkdtempSync, renameSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import Database from 'better-sqlite3';
import { sql } from 'kysely';
import { createDb, dialectOf } from '../../db/database.js';
import type { Db } from '../../db/database.js';
import { migrateToLatest } from '../../app/schema.js';
import { DIALECTS, createTestDatabase, dialectAvailable } from '../../../test/helpers/dialects.js';
import type { TestDatabase } from '../../../test/helpers/dialects.js';
import { FakeClock } from '../../../test/helpers/app.js';
import { skipNotice } from '../../../test/helpers/services.js';
import { mailDaemonsUnavailable } from '../../../test/helpers/mail-daemons.js';
import { ALICE, BOB, SECRET_SUBJECT, STRANGER, mailTraffic } from '../../../test/helpers/mail-traffic.js';
import { StatsRepository } from './stats.repository.js';
import type { WriterTuning } from './stats.repository.js';
import { StatsService } from './stats.service.js';

/**
 * `stats collect` on the log of real mail through the test Postfix and
 * Dovecot (swaks): what it stores, checked against the log itself and
 * against pflogsumm; both timestamp shapes, rotation to `.1` and `.gz`, a
 * year boundary, collecting twice, retention and the privacy rule.
 */

const unavailable = mailDaemonsUnavailable();
if (unavailable !== null) skipNotice('Dovecot, Postfix and swaks', unavailable);

const REMOTE = 'x@remote.test';
// Batch A, then batch B: every direction, a message with a local and a remote copy.
const BATCH_A = [
  { auth: ALICE, from: ALICE, to: BOB, bodyBytes: 100 },
  { auth: ALICE, from: ALICE, to: REMOTE, bodyBytes: 2000 },
  { from: STRANGER, to: ALICE, bodyBytes: 500 },
  { from: STRANGER, to: BOB, bodyBytes: 3000 },
];
const BATCH_B = [
  { auth: BOB, from: BOB, to: ALICE, bodyBytes: 700 },
  { auth: BOB, from: BOB, to: 'y@remote.test', bodyBytes: 1500 },
  { from: STRANGER, to: BOB, bodyBytes: 50 },
  { auth: ALICE, from: ALICE, to: `${BOB},z@remote.test`, bodyBytes: 900 },
];

type Row = { mailbox: string; direction: string; size: number; at: number };

/** The rows the log calls for, read from it with the test's own reading (qmgr's size and time per queue id). */
function expectedRows(log: string): Row[] {
  const size = new Map<string, { size: number; at: number }>();
  for (const m of log.matchAll(/^(\w{3} +\d+ [\d:]+) \S+ \S+\/qmgr\[\d+\]: (\w+): from=<[^>]*>, size=(\d+),/gm)) {
    size.set(m[2] ?? '', { size: Number(m[3]), at: new Date(`${m[1]} ${new Date().getFullYear()}`).getTime() });
  }
  const s = (qid: string) => size.get(qid) ?? { size: -1, at: -1 };
  // The queue ids of each message, by its first recipient in the order sent.
  const qidTo = [...log.matchAll(/\/(lmtp|discard)\[\d+\]: (\w+): to=<([^>]+)>/g)];
  const byRecipient = (to: string) => [...new Set(qidTo.filter((m) => m[3] === to).map((m) => m[2] ?? ''))];
  const rows: Row[] = [];
  const push = (qid: string, mailbox: string, direction: string) => rows.push({ mailbox, direction, ...s(qid) });
  const [abQ, baQ] = [byRecipient(BOB), byRecipient(ALICE)];
  // Delivered to bob: alice→bob (local), stranger→bob ×2 (inbound), the multi-recipient one (local).
  const strangerQ = new Set(log.match(/^.*\/qmgr\[\d+\]: (\w+): from=<stranger@remote\.test>.*$/gm)?.map((l) => /: (\w+): from/.exec(l)?.[1] ?? '') ?? []);
  for (const q of abQ) push(q, BOB, strangerQ.has(q) ? 'inbound' : 'local');
  for (const q of baQ) push(q, ALICE, strangerQ.has(q) ? 'inbound' : 'local');
  for (const to of [REMOTE, 'y@remote.test', 'z@remote.test']) {
    for (const q of byRecipient(to)) {
      const sender = new RegExp(`: ${q}: from=<([^>]+)>`).exec(log)?.[1] ?? '';
      push(q, sender, 'outbound');
    }
  }
  return rows.sort(order);
}
const order = (a: Row, b: Row) => a.at - b.at || a.mailbox.localeCompare(b.mailbox) || a.direction.localeCompare(b.direction) || a.size - b.size;

const MONTH = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];
/** The same log with rsyslog's RFC 3339 timestamps, written in +02:00 (the same instants). */
function toRfc3339(log: string): string {
  return log.replace(/^(\w{3}) +(\d+) (\d\d):(\d\d):(\d\d) /gm, (_all, mon: string, d: string, h: string, mi: string, s: string) => {
    const t = new Date(new Date().getFullYear(), MONTH.indexOf(mon), Number(d), Number(h), Number(mi), Number(s)).getTime() + 2 * 3_600_000;
    const iso = new Date(t).toISOString().slice(0, 19);
    return `${iso}.123456+02:00 `;
  });
}

let logA = '';
let logAB = '';
const daemons = unavailable === null;

beforeAll(async () => {
  if (!daemons) return;
  const run = await mailTraffic([BATCH_A, BATCH_B]);
  [logA, logAB] = [run.logs[0] ?? '', run.logs[1] ?? ''];
}, 180_000);

for (const dialect of DIALECTS) {
  describe(`stats collect on a real Postfix log (${dialect})`, async () => {
    const available = daemons && (await dialectAvailable(dialect));
    let tdb: TestDatabase;
    let db: Db;
    let dir: string;
    const clock = new FakeClock();
    let retention = 365;
    const service = (log: string, tuning?: WriterTuning) => new StatsService(new StatsRepository(db, dialectOf(tdb.url)), clock, log, () => retention, tuning);
    // SQLite's paths for a big log with this small one: the writer thread, and a bulk load from the first batch.
    const MODES: Array<[string, WriterTuning]> = [
      ['the writer thread, bulk load', { threadMinBytes: 0, bulkMinRows: 1 }],
      ['the writer thread, batches', { threadMinBytes: 0 }],
      ['this thread, bulk load', { bulkMinRows: 1 }],
    ];
    const stored = async (): Promise<Row[]> =>
      (await db.selectFrom('stats_messages').select(['mailbox', 'direction', 'size', 'at']).execute()).map((r) => ({ ...r, size: Number(r.size), at: Number(r.at) })).sort(order);
    const reset = async () => {
      await db.deleteFrom('stats_messages').execute();
      await db.deleteFrom('stats_collector').execute();
      rmSync(dir, { recursive: true, force: true });
      dir = mkdtempSync(join(tmpdir(), 'mailsvc-stats-'));
      retention = 365;
      clock.t = Date.now();
    };

    beforeAll(async () => {
      if (!available) return;
      tdb = await createTestDatabase(dialect);
      db = createDb(tdb.url);
      await migrateToLatest(db);
      dir = mkdtempSync(join(tmpdir(), 'mailsvc-stats-'));
    });
    afterAll(async () => {
      await db?.destroy();
      await tdb?.drop();
      if (dir) rmSync(dir, { recursive: true, force: true });
    });

    it.skipIf(!available)('stores one row per message and mailbox with the direction the log shows; collecting again adds nothing', async () => {
      await reset();
      const path = join(dir, 'mail.log');
      writeFileSync(path, logAB);
      const first = await service(path).collect();
      const want = expectedRows(logAB);
      expect(want).toHaveLength(9);
      expect(first.rows_added).toBe(9);
      expect(await stored()).toEqual(want);
      expect(want.filter((r) => r.direction === 'local').map((r) => r.mailbox).sort()).toEqual([ALICE, BOB, BOB]);
      expect(want.filter((r) => r.direction === 'outbound').map((r) => r.mailbox).sort()).toEqual([ALICE, ALICE, BOB]);
      expect(want.filter((r) => r.direction === 'inbound').map((r) => r.mailbox).sort()).toEqual([ALICE, BOB, BOB]);
      const again = await service(path).collect();
      expect(again.rows_added).toBe(0);
      // Even with the saved position lost, the same messages are not counted twice.
      await db.deleteFrom('stats_collector').execute();
      expect((await service(path).collect()).rows_added).toBe(0);
      expect(await stored()).toEqual(want);
    });

    it.skipIf(!available)('agrees with pflogsumm on the same log: messages and bytes delivered to our domain and elsewhere, received from ours and from outside', async () => {
      await reset();
      const path = join(dir, 'mail.log');
      writeFileSync(path, logAB);
      await service(path).collect();
      const syslogName = /^\S+ +\d+ [\d:]+ \S+ (postfix-test-\d+)\//m.exec(logAB)?.[1] ?? 'postfix';
      const report = execFileSync('pflogsumm', [`--syslog-name=(?:postfix|${syslogName})`, path], { encoding: 'utf8' });
      const table = (title: string) => {
        const part = report.split(title)[1]?.split('\n\n')[0] ?? '';
        return Object.fromEntries([...part.matchAll(/^\s+(\d+)\s+(\d+)\s.*?(\S+)$/gm)].map((m) => [m[3], { messages: Number(m[1]), bytes: Number(m[2]) }]));
      };
      const delivered = table('Message Delivery');
      const received = table('Messages Received');
      const summary = await service(path).summary({ from: '2000-01-01', to: '2100-01-01' });
      const sum = (rows: Row[]) => ({ messages: rows.length, bytes: rows.reduce((n, r) => n + r.size, 0) });
      const rows = await stored();
      // Copies delivered into example.org mailboxes are our inbound and local rows; copies sent elsewhere our outbound ones (one remote recipient each).
      expect(delivered['example.org']).toEqual(sum(rows.filter((r) => r.direction !== 'outbound')));
      expect(delivered['remote.test']).toEqual(summary.outbound);
      // Mail from outside is the inbound rows (one recipient each); mail from our senders is the distinct messages of the local and outbound rows.
      expect(received['remote.test']).toEqual(summary.inbound);
      const keyed = await db.selectFrom('stats_messages').select(['msg_key', 'size', 'at', 'mailbox', 'direction']).where('direction', '!=', 'inbound').execute();
      const ours = new Map(keyed.map((r) => [r.msg_key, { ...r, size: Number(r.size), at: Number(r.at) }]));
      expect(received['example.org']).toEqual(sum([...ours.values()]));
      expect(summary.total.messages).toBe(9);
    });

    it.skipIf(!available)('reads RFC 3339 timestamps (with an offset) to the same rows and instants', async () => {
      await reset();
      const path = join(dir, 'mail.log');
      writeFileSync(path, toRfc3339(logAB));
      expect(toRfc3339(logAB)).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.123456\+02:00 mail postfix/m);
      await service(path).collect();
      // The fraction of a second counts too: .123456 is 123 ms past the classic timestamp's second.
      expect(await stored()).toEqual(expectedRows(logAB).map((r) => ({ ...r, at: r.at + 123 })));
    });

    it.skipIf(!available)('follows rotation to .1 and then .2.gz, with a line cut in half, and counts every message exactly once', async () => {
      await reset();
      const path = join(dir, 'mail.log');
      const lines = logAB.split('\n').filter(Boolean).map((l) => `${l}\n`);
      const cut = (a: number) => Math.floor(lines.length * a);
      const [c1, c2, c3, c4, c5] = [lines.slice(0, cut(0.3)), lines.slice(cut(0.3), cut(0.5)), lines.slice(cut(0.5), cut(0.7)), lines.slice(cut(0.7), cut(0.85)), lines.slice(cut(0.85))];
      const half = (c2[0] ?? '').slice(0, 20);
      // Run 1: the log ends in the middle of a line.
      writeFileSync(path, c1.join('') + half);
      await service(path).collect();
      // Postfix finishes the line and writes more; logrotate renames the file; Postfix goes on in a new one.
      appendFileSync(path, (c2[0] ?? '').slice(20) + c2.slice(1).join(''));
      renameSync(path, `${path}.1`);
      writeFileSync(path, c3.join(''));
      await service(path).collect();
      // More lines reach the file before the next rotation, which compresses the old .1 to .2.gz.
      appendFileSync(path, c4.join(''));
      writeFileSync(`${path}.2.gz`, gzipSync(c1.join('') + c2.join('')));
      rmSync(`${path}.1`);
      renameSync(path, `${path}.1`);
      writeFileSync(path, c5.join(''));
      const last = await service(path).collect();
      expect(last.files_read).toEqual([`${path}.1`, path]);
      expect(await stored()).toEqual(expectedRows(logAB));
      expect((await service(path).collect()).rows_added).toBe(0);
    });

    it.skipIf(!available)('reads a .gz file it has not read yet, oldest first', async () => {
      await reset();
      const path = join(dir, 'mail.log');
      writeFileSync(`${path}.2.gz`, gzipSync(logA));
      writeFileSync(`${path}.1`, logAB.slice(logA.length));
      writeFileSync(path, '');
      const r = await service(path).collect();
      expect(r.files_read).toEqual([`${path}.2.gz`, `${path}.1`, path]);
      expect(await stored()).toEqual(expectedRows(logAB));
    });

    it.skipIf(!available)('puts December lines in the old year when the file was last written in January', async () => {
      await reset();
      const path = join(dir, 'mail.log');
      // Batch A's lines at 31 December 23:59, batch B's at 1 January 00:00.
      const dec = logA.replace(/^\w{3} +\d+ \d\d:\d\d:(\d\d) /gm, 'Dec 31 23:59:$1 ');
      const jan = logAB.slice(logA.length).replace(/^\w{3} +\d+ \d\d:\d\d:(\d\d) /gm, 'Jan  1 00:00:$1 ');
      writeFileSync(path, dec + jan);
      const mtime = new Date(2031, 0, 1, 0, 5);
      utimesSync(path, mtime, mtime);
      clock.t = mtime.getTime();
      await service(path).collect();
      const years = (await stored()).map((r) => new Date(r.at).getFullYear());
      expect(years.filter((y) => y === 2030)).toHaveLength(4);
      expect(years.filter((y) => y === 2031)).toHaveLength(5);
      expect((await stored()).every((r) => r.at <= mtime.getTime())).toBe(true);
    });

    it.skipIf(!available)('stores no subject, message id, remote address or client address, not even for a message still open', async () => {
      await reset();
      const path = join(dir, 'mail.log');
      // The log cut right after the queue manager took a stranger's message: it stays open in the saved state.
      const cutAt = logAB.indexOf('\n', logAB.lastIndexOf('from=<stranger@remote.test>')) + 1;
      writeFileSync(path, logAB.slice(0, cutAt));
      const r = await service(path).collect();
      expect(r.open_messages).toBeGreaterThan(0);
      const dump = JSON.stringify([await db.selectFrom('stats_messages').selectAll().execute(), await db.selectFrom('stats_collector').selectAll().execute()]);
      expect(dump).toContain(ALICE);
      for (const secret of [SECRET_SUBJECT, 'remote.test', '127.0.0.1', 'localhost', 'message-id', '@vm>', 'dovecot-lmtp']) expect(dump).not.toContain(secret);
      // Nothing from the log's text beyond the mailbox: the row has exactly these columns.
      expect(Object.keys((await db.selectFrom('stats_messages').selectAll().executeTakeFirstOrThrow())).sort()).toEqual(['at', 'direction', 'mailbox', 'msg_key', 'size']);
    });

    // The bulk load and the writer thread are SQLite's (PostgreSQL and MariaDB write in this thread, batch by batch).
    if (dialect === 'sqlite') {
      it.skipIf(!available).each(MODES)('SQLite, %s: the same rows, the indexes as before, collecting again adds nothing', async (_mode, tuning) => {
        await reset();
        const path = join(dir, 'mail.log');
        writeFileSync(path, logAB);
        const indexes = async () => (await sql<{ name: string; sql: string }>`select name, sql from sqlite_master where type = 'index' and tbl_name = 'stats_messages' order by name`.execute(db)).rows;
        const before = await indexes();
        expect(before.map((i) => i.name)).toContain('stats_messages_mailbox_at');
        // The thresholds lowered: this small log takes a big log's path.
        const first = await service(path, tuning).collect();
        expect(first.rows_added).toBe(9);
        expect(await stored()).toEqual(expectedRows(logAB));
        expect(await indexes()).toEqual(before);
        expect((await service(path, tuning).collect()).rows_added).toBe(0);
        await db.deleteFrom('stats_collector').execute();
        expect((await service(path, tuning).collect()).rows_added).toBe(0);
        expect(await stored()).toEqual(expectedRows(logAB));
      });

      it.skipIf(!available).each(MODES)('SQLite, %s: when the rows cannot be written (the database locked), the run fails and nothing of it stays', async (_mode, tuning) => {
        await reset();
        const path = join(dir, 'mail.log');
        writeFileSync(path, logAB);
        // Another connection holds the write lock past the writer's 5 s busy timeout.
        const other = new Database(tdb.url.replace(/^sqlite:\/\//, ''));
        other.exec('begin immediate');
        try {
          await expect(service(path, tuning).collect()).rejects.toThrow(/database is locked/);
        } finally {
          other.exec('rollback');
          other.close();
        }
        expect(await stored()).toEqual([]);
        expect(await db.selectFrom('stats_collector').selectAll().execute()).toEqual([]);
        // The next run reads everything.
        expect((await service(path, tuning).collect()).rows_added).toBe(9);
      }, 20_000);
    }

    it.skipIf(!available)('deletes rows older than the retention when it collects', async () => {
      await reset();
      const path = join(dir, 'mail.log');
      writeFileSync(path, logAB);
      await service(path).collect();
      const times = (await stored()).map((r) => r.at);
      // Ten days later with a retention of 10 days: everything but what is exactly 10 days old or younger goes.
      clock.t = Math.max(...times) + 10 * 86_400_000;
      retention = 10;
      const r = await service(path).collect();
      expect(r.rows_pruned).toBe(times.filter((t) => t < clock.t - 10 * 86_400_000).length);
      expect((await stored()).every((row) => row.at >= clock.t - 10 * 86_400_000)).toBe(true);
      retention = 9;
      await service(path).collect();
      expect(await stored()).toEqual([]);
    });
  });
}
