import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startTestApp } from '../../../test/helpers/app.js';
import type { TestApp } from '../../../test/helpers/app.js';
import { REPO_ROOT, expectOneErrorLine, runCli } from '../../../test/helpers/cli.js';
import { DIALECTS, createTestDatabase, dialectAvailable } from '../../../test/helpers/dialects.js';
import type { TestDatabase } from '../../../test/helpers/dialects.js';
import { call } from '../../../test/helpers/flows.js';
import { FakeJournalctl, asJournalLines } from '../../../test/helpers/fake-journalctl.js';

/**
 * GET /stats/summary|mailboxes|timeline on every dialect over rows spread
 * across a year, checked against sums computed here; and the CLI over a log
 * Postfix wrote (captured from the test Postfix).
 */

const DAY = 86_400_000;
const T0 = Date.UTC(2026, 0, 1);
const MAILBOXES = ['a@example.org', 'b@example.org', 'c@example.org'];
const DIRS = ['inbound', 'outbound', 'local'] as const;
// Deterministic rows: every 13 hours for a year, mailbox, direction and size cycling.
const ROWS = Array.from({ length: 673 }, (_, i) => ({
  msg_key: `k${i}`, mailbox: MAILBOXES[i % 3] ?? '', direction: DIRS[i % 3 === 0 ? i % 2 : (i % 4) % 3] ?? 'inbound', size: 1000 + i, at: T0 + i * 13 * 3_600_000,
}));
type R = (typeof ROWS)[number];
const figures = (rows: R[]) => ({ messages: rows.length, bytes: rows.reduce((n, r) => n + r.size, 0) });

for (const dialect of DIALECTS) {
  describe(`the stats routes (${dialect})`, async () => {
    const available = await dialectAvailable(dialect);
    let db: TestDatabase;
    let t: TestApp;
    const get = (url: string) => call(t, 'GET', url, t.basic());

    beforeAll(async () => {
      if (!available) return;
      db = await createTestDatabase(dialect);
      t = await startTestApp(db.url, { MAILSVC_MFA_REQUIRED: 'no' });
      for (let i = 0; i < ROWS.length; i += 200) await t.ctx.modules.infra.db.insertInto('stats_messages').values(ROWS.slice(i, i + 200)).execute();
    });
    afterAll(async () => {
      await t?.close();
      await db?.drop();
    });

    it.skipIf(!available)('summary: totals per direction over a range, narrowed by mailbox or direction', async () => {
      const inRange = ROWS.filter((r) => r.at >= Date.UTC(2026, 2, 1) && r.at < Date.UTC(2026, 5, 1));
      const res = await get('/stats/summary?from=2026-03-01&to=2026-06-01');
      expect(res.status).toBe(200);
      expect(res.body).toEqual({
        from: '2026-03-01T00:00:00.000Z', to: '2026-06-01T00:00:00.000Z', mailbox: null, direction: null,
        total: figures(inRange), ...Object.fromEntries(DIRS.map((d) => [d, figures(inRange.filter((r) => r.direction === d))])),
      });
      const one = await get('/stats/summary?from=2026-03-01&to=2026-06-01&mailbox=B@example.org&direction=outbound');
      expect(one.body).toMatchObject({ mailbox: 'b@example.org', direction: 'outbound', total: figures(inRange.filter((r) => r.mailbox === 'b@example.org' && r.direction === 'outbound')) });
    });

    it.skipIf(!available)('mailboxes: a page per mailbox, busiest first, with figures per direction', async () => {
      const res = await get('/stats/mailboxes?from=2026-01-01&to=2027-01-01&limit=2');
      expect(res.status).toBe(200);
      const body = res.body as { items: Array<{ mailbox: string }>; total: number; limit: number; offset: number };
      expect(body.total).toBe(3);
      expect(body.items).toHaveLength(2);
      const byBox = (m: string) => ROWS.filter((r) => r.mailbox === m && r.at < Date.UTC(2027, 0, 1));
      const busiest = [...MAILBOXES].sort((a, b) => byBox(b).length - byBox(a).length || a.localeCompare(b));
      expect(body.items.map((i) => i.mailbox)).toEqual(busiest.slice(0, 2));
      expect(body.items[0]).toEqual({ mailbox: busiest[0], ...Object.fromEntries(DIRS.map((d) => [d, figures(byBox(busiest[0] ?? '').filter((r) => r.direction === d))])) });
    });

    it.skipIf(!available)('timeline: per UTC day, and per hour for a short range', async () => {
      const days = await get('/stats/timeline?from=2026-02-01&to=2026-02-08');
      expect(days.status).toBe(200);
      const body = days.body as { bucket: string; items: Array<{ time: string; inbound: unknown; outbound: unknown; local: unknown }> };
      expect(body.bucket).toBe('day');
      const week = ROWS.filter((r) => r.at >= Date.UTC(2026, 1, 1) && r.at < Date.UTC(2026, 1, 8));
      const starts = [...new Set(week.map((r) => r.at - (r.at % DAY)))];
      expect(body.items.map((i) => i.time)).toEqual(starts.map((s) => new Date(s).toISOString()));
      for (const item of body.items) {
        const s = Date.parse(item.time);
        const inDay = week.filter((r) => r.at >= s && r.at < s + DAY);
        expect(item).toEqual({ time: item.time, ...Object.fromEntries(DIRS.map((d) => [d, figures(inDay.filter((r) => r.direction === d))])) });
      }
      const hours = await get('/stats/timeline?from=2026-02-01&to=2026-02-02');
      expect((hours.body as { bucket: string }).bucket).toBe('hour');
      expect((hours.body as { items: Array<{ time: string }> }).items.map((i) => i.time)).toEqual(
        ROWS.filter((r) => r.at >= Date.UTC(2026, 1, 1) && r.at < Date.UTC(2026, 1, 2)).map((r) => new Date(r.at).toISOString()),
      );
    });

    it.skipIf(!available)('a bad range is 400 and a bad direction 422, never 5xx; without credentials 401', async () => {
      expect((await get('/stats/summary?from=yesterday')).status).toBe(400);
      expect((await get('/stats/summary?from=2026-02-01&to=2026-01-01')).status).toBe(400);
      expect((await get('/stats/summary?direction=sideways')).status).toBe(422);
      expect((await get('/stats/timeline?from=2000-01-01&to=2026-01-01&bucket=hour')).status).toBe(400);
      expect((await get('/stats/mailboxes?limit=0')).status).toBe(400);
      expect((await t.app.inject({ method: 'GET', url: '/stats/summary' })).statusCode).toBe(401);
    });
  });
}

describe('the stats CLI', () => {
  let dir: string;
  const env = () => ({ MAILSVC_DATA_DIR: dir, MAILSVC_MAIL_LOG: join(dir, 'mail.log') });
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'mailsvc-stats-cli-'));
    expect((await runCli(['db', 'migrate'], { env: env() })).code).toBe(0);
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('stats collect --json reads the log once; stats summary --json and mailboxes --json show what it stored', async () => {
    // No mail log and no journal here (a fake journalctl that finds no journal files: the machine's own journal must not count).
    const noJournal = new FakeJournalctl();
    noJournal.setMode('no-files');
    const none = await runCli(['stats', 'collect'], { env: { ...env(), PATH: `${noJournal.dir}:${process.env.PATH ?? ''}` } });
    noJournal.remove();
    expect(none.code).toBe(1);
    expect(expectOneErrorLine(none)).toMatch(/MAILSVC_MAIL_LOG/);
    copyFileSync(join(REPO_ROOT, 'test/fixtures/stats/postfix-real.log'), join(dir, 'mail.log'));
    const first = await runCli(['stats', 'collect', '--json'], { env: env() });
    expect(first.code, first.stderr).toBe(0);
    expect(JSON.parse(first.stdout)).toMatchObject({ rows_added: 3, open_messages: 0 });
    expect(JSON.parse((await runCli(['stats', 'collect', '--json'], { env: env() })).stdout)).toMatchObject({ rows_added: 0 });
    const summary = await runCli(['stats', 'summary', '--from', '2026-11-01', '--to', '2026-12-01', '--json'], { env: env() });
    expect(JSON.parse(summary.stdout)).toMatchObject({ total: { messages: 3, bytes: 490 + 2387 + 897 }, inbound: { messages: 1, bytes: 897 }, outbound: { messages: 1, bytes: 2387 }, local: { messages: 1, bytes: 490 } });
    const boxes = await runCli(['stats', 'mailboxes', '--from', '2026-11-01', '--to', '2026-12-01', '--json'], { env: env() });
    expect((JSON.parse(boxes.stdout) as Array<{ mailbox: string }>).map((b) => b.mailbox).sort()).toEqual(['alice@example.org', 'bob@example.org']);
    const bad = await runCli(['stats', 'summary', '--direction', 'up'], { env: env() });
    expect(bad.code).toBe(2);
    // A day that does not exist is named as such (Date.parse made it 1 December: "from must be before to").
    const nov31 = await runCli(['stats', 'summary', '--from', '2026-11-31'], { env: env() });
    expect(nov31.code).toBe(2);
    expect(expectOneErrorLine(nov31)).toMatch(/from "2026-11-31" is not a real ISO 8601 date/);
  }, 60_000);

  it('stats collect without a mail log reads the journal: --json says so, the human line names it; a journal it may not read is one error line, exit 69', async () => {
    const jdir = mkdtempSync(join(tmpdir(), 'mailsvc-stats-cli-journal-'));
    const fake = new FakeJournalctl();
    try {
      const jenv = { MAILSVC_DATA_DIR: jdir, MAILSVC_MAIL_LOG: join(jdir, 'mail.log'), PATH: `${fake.dir}:${process.env.PATH ?? ''}` };
      expect((await runCli(['db', 'migrate'], { env: jenv })).code).toBe(0);
      fake.append(asJournalLines(readFileSync(join(REPO_ROOT, 'test/fixtures/stats/postfix-real.log'), 'utf8'), new Date().getFullYear()));
      const r = await runCli(['stats', 'collect', '--json'], { env: jenv });
      expect(r.code, r.stderr).toBe(0);
      expect(JSON.parse(r.stdout)).toEqual({ files_read: [], journal: { from: 'beginning', lines: 26 }, lines: 26, rows_added: 3, rows_pruned: 0, open_messages: 0 });
      const human = await runCli(['stats', 'collect'], { env: jenv });
      expect(human.stdout).toMatch(/^Read 0 lines from the systemd journal: 0 rows added/);
      fake.setMode('denied');
      const denied = await runCli(['stats', 'collect'], { env: jenv });
      expect(denied.code).toBe(69);
      expect(expectOneErrorLine(denied)).toMatch(/cannot read the systemd journal as this user .*insufficient permissions.*group adm or systemd-journal/);
    } finally {
      fake.remove();
      rmSync(jdir, { recursive: true, force: true });
    }
  }, 60_000);

  it('stats collect shows its progress on stderr for a big log (tenths off a terminal); the JSON on stdout stays whole', async () => {
    // 64 MiB and more: the real log's lines over and over (the same messages: nothing is counted twice).
    const real = readFileSync(join(REPO_ROOT, 'test/fixtures/stats/postfix-real.log'));
    const big = join(dir, 'big.log');
    const copies = Math.ceil((65 << 20) / real.length);
    // A first line of its own: a file starting like mail.log would be taken for it (the same head) and read from its offset.
    const first = Buffer.from('Nov 23 15:49:32 mail postfix/anvil[1]: statistics: max connection rate 1/60s\n');
    writeFileSync(big, Buffer.concat([first, ...Array.from({ length: copies }, () => real)]));
    const r = await runCli(['stats', 'collect', '--json'], { env: { ...env(), MAILSVC_MAIL_LOG: big }, timeoutMs: 120_000 });
    expect(r.code, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({ files_read: [big], lines: 1 + copies * real.toString('utf8').split('\n').filter(Boolean).length });
    const progress = r.stderr.split('\n').filter((l) => /^\[ *\d+%\] read \d+(\.\d)? MiB of 65\.\d MiB$/.test(l));
    expect(progress.length).toBeGreaterThanOrEqual(5);
    expect(r.stderr).toMatch(/\[100%\] read \d+ lines\n$/);
  }, 120_000);
});
