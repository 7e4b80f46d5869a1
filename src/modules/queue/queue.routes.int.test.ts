import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startTestApp } from '../../../test/helpers/app.js';
import type { TestApp } from '../../../test/helpers/app.js';
import { runCli } from '../../../test/helpers/cli.js';
import { createTestDatabase } from '../../../test/helpers/dialects.js';
import type { TestDatabase } from '../../../test/helpers/dialects.js';
import { call } from '../../../test/helpers/flows.js';
import { queuePostfixUnavailable, startQueuePostfix } from '../../../test/helpers/postfix-queue.js';
import type { QueuePostfix } from '../../../test/helpers/postfix-queue.js';
import { skipNotice } from '../../../test/helpers/services.js';

// The API and the CLI over a real Postfix. The queue lives in Postfix, not in the database;
// the database only takes the audit records, so one dialect (SQLite) is enough here.
const unavailable = queuePostfixUnavailable();
if (unavailable) skipNotice('Postfix (postqueue, postsuper, root)', unavailable);

const MESSAGES = [
  { from: 'alice@one.test', to: ['r1@x.test'] },
  { from: 'bob@two.test', to: ['r2@y.test'] },
  { from: 'carol@one.test', to: ['r3@x.test'] },
];

describe.skipIf(unavailable !== null)('the queue API and CLI over a real Postfix', () => {
  let pf: QueuePostfix;
  let db: TestDatabase;
  let t: TestApp;
  let dataDir: string;
  const ids = new Map<string, string>();
  const cli = (...args: string[]) =>
    runCli(args, { env: { MAILSVC_DATA_DIR: dataDir, MAILSVC_HELPER: 'direct', MAILSVC_POSTFIX_CONFIG_DIR: pf.configDir }, timeoutMs: 60_000 });
  const queued = async () => (await pf.queue()).map((m) => `${m.sender} ${m.queue_name}`).sort();

  beforeAll(async () => {
    pf = await startQueuePostfix();
    db = await createTestDatabase('sqlite');
    t = await startTestApp(db.url, { MAILSVC_MFA_REQUIRED: 'no', MAILSVC_HELPER: 'direct', MAILSVC_POSTFIX_CONFIG_DIR: pf.configDir });
    dataDir = mkdtempSync(join(tmpdir(), 'mailsvc-queue-cli-'));
    expect((await cli('db', 'migrate')).code).toBe(0);
  }, 120_000);
  afterAll(async () => {
    await t?.close();
    await db?.drop();
    await pf?.stop();
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  });
  beforeEach(async () => {
    // Bounces from an earlier test may still be on their way through the active queue.
    const emptied = async () => ((await pf.queue()).length > 0 ? (await call(t, 'DELETE', '/admin/queue?older_than=0', t.basic()), (await pf.queue()).length) : 0);
    await expect.poll(emptied, { timeout: 20_000, interval: 300 }).toBe(0);
    await pf.send(MESSAGES);
    ids.clear();
    for (const m of await pf.settle(3)) ids.set(m.sender, m.queue_id);
  }, 60_000);

  it('GET /admin/queue answers {items,total,limit,offset}, filtered and paged', async () => {
    const all = await call(t, 'GET', '/admin/queue', t.basic());
    expect(all.status).toBe(200);
    expect(all.body).toMatchObject({ total: 3, limit: 50, offset: 0 });
    const one = await call(t, 'GET', '/admin/queue?sender=%40one.test&recipient=r3%40x.test&queue=deferred', t.basic());
    expect(one.body).toMatchObject({ total: 1, items: [{ queue_id: ids.get('carol@one.test'), sender: 'carol@one.test', queue_name: 'deferred' }] });
    const page = await call(t, 'GET', '/admin/queue?limit=1&offset=2', t.basic());
    expect(page.body).toMatchObject({ total: 3, limit: 1, offset: 2 });
    expect((page.body.items as unknown[]).length).toBe(1);
    expect((await call(t, 'GET', '/admin/queue/counts', t.basic())).body).toEqual({ maildrop: 0, incoming: 0, active: 0, deferred: 3, hold: 0 });
    expect((await call(t, 'GET', '/admin/queue?limit=0', t.basic())).status).toBe(400);
  });

  it('GET /admin/queue?sort= orders while postqueue streams (ties by queue id), pages stably, refuses an unknown field with 422', async () => {
    type Entry = { queue_id: string; sender: string; message_size: number; arrival_time: string };
    const list = async (query: string): Promise<Entry[]> => {
      const r = await call(t, 'GET', `/admin/queue${query}`, t.basic());
      expect(r.status, JSON.stringify(r.body)).toBe(200);
      return r.body.items as Entry[];
    };
    const senders = async (query: string) => (await list(query)).map((m) => m.sender);
    expect(await senders('?sort=sender')).toEqual(['alice@one.test', 'bob@two.test', 'carol@one.test']);
    expect(await senders('?sort=-sender')).toEqual(['carol@one.test', 'bob@two.test', 'alice@one.test']);
    expect(await senders('?sort=-sender&sender=%40one.test')).toEqual(['carol@one.test', 'alice@one.test']);
    const all = await list('');
    const byId = (a: Entry, b: Entry) => (a.queue_id < b.queue_id ? -1 : a.queue_id > b.queue_id ? 1 : 0);
    for (const [sort, key] of [['message_size', (m: Entry) => m.message_size], ['arrival_time', (m: Entry) => Date.parse(m.arrival_time)]] as const) {
      const asc = [...all].sort((a, b) => key(a) - key(b) || byId(a, b)).map((m) => m.queue_id);
      const desc = [...all].sort((a, b) => key(b) - key(a) || byId(a, b)).map((m) => m.queue_id);
      expect((await list(`?sort=${sort}`)).map((m) => m.queue_id), sort).toEqual(asc);
      expect((await list(`?sort=-${sort}`)).map((m) => m.queue_id), sort).toEqual(desc);
    }
    // One page at a time: each message once, in the same order.
    const walked: string[] = [];
    for (let offset = 0; offset < 3; offset += 1) walked.push(...(await senders(`?sort=-sender&limit=1&offset=${offset}`)));
    expect(walked).toEqual(['carol@one.test', 'bob@two.test', 'alice@one.test']);
    expect(await senders('?sort=sender&limit=2&offset=2')).toEqual(['carol@one.test']);
    for (const sort of ['recipient', 'nope', '-']) {
      const bad = await call(t, 'GET', `/admin/queue?sort=${sort}`, t.basic());
      expect(bad.status, sort).toBe(422);
      expect(bad.body.errors).toEqual([{ path: 'querystring.sort', message: expect.stringMatching(/^must be one of arrival_time, -arrival_time/) }]);
    }
    const cliList = await cli('queue', 'list', '--json', '--sort=-sender');
    expect(cliList.code, cliList.stderr).toBe(0);
    expect((JSON.parse(cliList.stdout) as Entry[]).map((m) => m.sender)).toEqual(['carol@one.test', 'bob@two.test', 'alice@one.test']);
  });

  it('POST hold/release and DELETE act on the real queue; unknown ids 404, wrong state 409; each call is audited', async () => {
    const id = ids.get('alice@one.test') ?? '';
    expect(await call(t, 'POST', `/admin/queue/${id}/hold`, t.basic())).toMatchObject({ status: 200, body: { queue_id: id, action: 'held' } });
    expect(await queued()).toContain('alice@one.test hold');
    expect((await call(t, 'POST', `/admin/queue/${id}/hold`, t.basic())).status).toBe(409);
    expect((await call(t, 'POST', `/admin/queue/${id}/release`, t.basic())).status).toBe(200);
    expect(await queued()).toContain('alice@one.test deferred');
    expect(await call(t, 'DELETE', `/admin/queue/${id}`, t.basic())).toMatchObject({ status: 200, body: { action: 'deleted' } });
    expect(await queued()).toEqual(['bob@two.test deferred', 'carol@one.test deferred']);
    const gone = await call(t, 'DELETE', `/admin/queue/${id}`, t.basic());
    expect(gone).toMatchObject({ status: 404, body: { detail: `no message ${id} in the mail queue` } });
    // Recorded once the answer has gone out.
    const actions = async () => ((await call(t, 'GET', '/admin/audit?limit=50', t.basic())).body.items as { action: string; result: string; target: string }[]).map((a) => `${a.action} ${a.target} ${a.result}`);
    await expect.poll(actions, { timeout: 30_000 }).toEqual(expect.arrayContaining([`DELETE /admin/queue/:id ${id} not_found`, `POST /admin/queue/:id/hold ${id} ok`, `POST /admin/queue/:id/hold ${id} conflict`]));
  });

  it('POST /admin/queue/batch holds, releases and deletes exactly the ids named; a bad id is 422 and nothing runs', async () => {
    const alice = ids.get('alice@one.test') ?? '';
    const carol = ids.get('carol@one.test') ?? '';
    const batch = (action: string, list: string[]) => call(t, 'POST', '/admin/queue/batch', t.basic(), { action, ids: list });
    expect(await batch('hold', [alice, carol, alice])).toMatchObject({ status: 200, body: { action: 'held', requested: 2, count: 2 } });
    expect(await queued()).toEqual(['alice@one.test hold', 'bob@two.test deferred', 'carol@one.test hold']);
    // Already held: asked for, not changed.
    expect(await batch('hold', [alice])).toMatchObject({ status: 200, body: { requested: 1, count: 0 } });
    expect(await batch('release', [carol])).toMatchObject({ status: 200, body: { action: 'released', requested: 1, count: 1 } });
    expect(await queued()).toEqual(['alice@one.test hold', 'bob@two.test deferred', 'carol@one.test deferred']);
    for (const [body, path] of [
      [{ action: 'delete', ids: [carol, 'not-a-queue-id'] }, 'body.ids.1'],
      [{ action: 'delete', ids: [] }, 'body.ids'],
      [{ action: 'bounce', ids: [carol] }, 'body.action'],
      [{ action: 'delete', ids: [carol], extra: 1 }, 'body.extra'],
    ] as const) {
      const bad = await call(t, 'POST', '/admin/queue/batch', t.basic(), body);
      expect(bad.status, JSON.stringify(body)).toBe(422);
      expect((bad.body.errors as { path: string }[]).map((e) => e.path), JSON.stringify(body)).toContain(path);
    }
    expect((await pf.queue()).length).toBe(3);
    expect(await batch('delete', [alice, carol])).toMatchObject({ status: 200, body: { action: 'deleted', requested: 2, count: 2 } });
    expect(await queued()).toEqual(['bob@two.test deferred']);
  });

  it('DELETE /admin/queue?…&dry_run=true counts without acting; the real one answers the count it deleted', async () => {
    expect(await call(t, 'DELETE', '/admin/queue?sender=%40one.test&dry_run=true', t.basic())).toMatchObject({ status: 200, body: { count: 2 } });
    expect((await pf.queue()).length).toBe(3);
    expect(await call(t, 'DELETE', '/admin/queue?sender=%40one.test&older_than=0', t.basic())).toMatchObject({ status: 200, body: { count: 2 } });
    expect(await queued()).toEqual(['bob@two.test deferred']);
  });

  it('mailsvc queue list --json prints the entries as one JSON array; filters and --queue work', async () => {
    const r = await cli('queue', 'list', '--json', '--sender', '@one.test');
    expect(r.code).toBe(0);
    const items = JSON.parse(r.stdout) as { sender: string; queue_name: string }[];
    expect(Array.isArray(items)).toBe(true);
    expect(items.map((i) => i.sender).sort()).toEqual(['alice@one.test', 'carol@one.test']);
    expect(JSON.parse((await cli('queue', 'list', '--json', '--queue', 'hold')).stdout)).toEqual([]);
    const bad = await cli('queue', 'list', '--queue', 'corrupt');
    expect(bad.code).not.toBe(0);
    const human = await cli('queue', 'list');
    expect(human.stdout).toContain(ids.get('bob@two.test'));
  }, 60_000);

  it('mailsvc queue hold|release|delete <id>: exit 0, 4 for an id not in the queue, 2 for a bad id (nothing runs)', async () => {
    const id = ids.get('bob@two.test') ?? '';
    expect((await cli('queue', 'hold', id)).code).toBe(0);
    expect(await queued()).toContain('bob@two.test hold');
    expect((await cli('queue', 'release', id, '--json')).stdout).toContain('"released"');
    expect((await cli('queue', 'delete', id)).code).toBe(0);
    const missing = await cli('queue', 'delete', id);
    expect([missing.code, missing.stderr.trim()]).toEqual([4, `mailsvc: no message ${id} in the mail queue`]);
    // Several ids: one postsuper run, the count it changed (the gone one is not counted).
    const alice = ids.get('alice@one.test') ?? '';
    const two = await cli('queue', 'hold', alice, id, '--json');
    expect(two.code, two.stderr).toBe(0);
    expect(JSON.parse(two.stdout)).toEqual({ action: 'held', requested: 2, count: 1 });
    const back = await cli('queue', 'release', alice, id);
    expect([back.code, back.stdout.trim()]).toEqual([0, '1 message released (of 2: the others were gone or already in that state).']);
    const bad = await cli('queue', 'hold', 'ALL');
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/^mailsvc: queue_id: "ALL" is not a Postfix queue id/);
    expect(await queued()).toEqual(['alice@one.test deferred', 'carol@one.test deferred']);
    const audit = JSON.parse((await cli('audit', 'list', '--json')).stdout) as { action: string; target: string; result: string }[];
    expect(audit.map((a) => `${a.action} ${a.target} ${a.result}`)).toEqual(
      expect.arrayContaining([`cli: queue hold ${id} ok`, `cli: queue delete ${id} ok`, `cli: queue delete ${id} not_found`, 'cli: queue hold ALL validation']),
    );
  }, 60_000);

  it('mailsvc queue delete --sender … shows the count and needs --yes; --dry-run only counts; --bounce returns mail', async () => {
    const refused = await cli('queue', 'delete', '--sender', '@one.test');
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain('2 messages match');
    expect((await pf.queue()).length).toBe(3);
    expect(JSON.parse((await cli('queue', 'delete', '--sender', '@one.test', '--dry-run', '--json')).stdout)).toEqual({ count: 2 });
    expect((await cli('queue', 'delete')).code).toBe(2);
    const done = await cli('queue', 'delete', '--recipient', 'r1@x.test', '--older-than', '0s', '--yes', '--json');
    expect([done.code, JSON.parse(done.stdout)]).toEqual([0, { count: 1 }]);
    expect(await queued()).toEqual(['bob@two.test deferred', 'carol@one.test deferred']);
    const bounced = await cli('queue', 'delete', '--sender', 'carol@one.test', '--bounce', '--yes');
    expect([bounced.code, bounced.stdout.trim()]).toEqual([0, '1 message returned to sender.']);
    await expect.poll(async () => (await queued()).filter((s) => s.startsWith('MAILER-DAEMON')).length, { timeout: 20_000 }).toBe(1);
    expect((await pf.queue()).find((m) => m.sender === 'MAILER-DAEMON')?.recipients[0]?.address).toBe('carol@one.test');
  }, 90_000);
});
