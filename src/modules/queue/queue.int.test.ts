import { helperConfig } from '../../../test/helpers/helper-config.js';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import pino from 'pino';
import { startQueuePostfix, queuePostfixUnavailable } from '../../../test/helpers/postfix-queue.js';
import type { QueuePostfix } from '../../../test/helpers/postfix-queue.js';
import { skipNotice } from '../../../test/helpers/services.js';
import { DirectHelperClient, HelperRunner } from '../../helper/runner.js';
import { AppError } from '../../shared/errors.js';
import { QueueService } from './queue.service.js';

// A real Postfix from its own temp configuration; hold/release/delete run the real postsuper
// through the helper's runner (in-process, as MAILSVC_HELPER=direct does), and every outcome
// is checked against `postqueue -j` afterwards, not against what the service says it did.
const unavailable = queuePostfixUnavailable();
if (unavailable) skipNotice('Postfix (postqueue, postsuper, root)', unavailable);

const MESSAGES = [
  { from: 'alice@one.test', to: ['r1@x.test'] },
  { from: 'bob@two.test', to: ['r2@y.test', 'R3@X.test'] },
  { from: 'Carol@One.test', to: ['r4@z.test'] },
];

let now = Date.now();
const clock = { now: () => now };
const serviceFor = (pf: QueuePostfix) =>
  new QueueService(
    pf.configDir,
    new DirectHelperClient(
      new HelperRunner(helperConfig({ doveadm: 'doveadm', dovecotConfig: undefined, postfixConfigDir: pf.configDir, fail2banSocket: '/run/f.sock', fail2banConfigDir: '/etc/fail2ban' }), pino({ level: 'silent' })),
    ),
    clock,
  );
const codeOf = async (p: Promise<unknown>) => ((await p.catch((e: unknown) => e)) as AppError).code;
const all = { limit: 500, offset: 0 };

describe.skipIf(unavailable !== null)('the mail queue against a real Postfix', () => {
  let pf: QueuePostfix;
  let queue: QueueService;
  const ids = new Map<string, string>();
  const refill = async () => {
    await pf.send(MESSAGES);
    const q = await pf.settle(MESSAGES.length);
    ids.clear();
    for (const m of q) ids.set(m.sender.toLowerCase(), m.queue_id);
  };
  beforeAll(async () => {
    pf = await startQueuePostfix();
    queue = serviceFor(pf);
  }, 60_000);
  afterAll(async () => {
    await pf?.stop();
  });
  beforeEach(async () => {
    now = Date.now() + 60_000;
    if ((await pf.queue()).length > 0) await queue.deleteMatching({ olderThanSeconds: 0 }, {});
    now = Date.now();
    await refill();
  }, 60_000);

  it('lists every message in the shape the API promises, with the same ids postqueue -j shows', async () => {
    const page = await queue.list({}, all);
    expect(page.total).toBe(3);
    expect(page.items.map((e) => e.queue_id).sort()).toEqual((await pf.queue()).map((m) => m.queue_id).sort());
    const bob = page.items.find((e) => e.sender === 'bob@two.test');
    expect(bob?.queue_name).toBe('deferred');
    expect(bob?.recipients.map((r) => r.address).sort()).toEqual(['R3@X.test', 'r2@y.test']);
    expect(Object.keys(bob ?? {}).sort()).toEqual(['arrival_time', 'message_size', 'queue_id', 'queue_name', 'recipients', 'sender']);
    expect(bob?.arrival_time).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.000Z$/);
    expect(Math.abs(Date.parse(bob?.arrival_time ?? '') - Date.now())).toBeLessThan(120_000);
    expect(bob?.message_size).toBeGreaterThan(50);
    expect(bob?.recipients[0]?.delay_reason).toMatch(/deferred transport/);
  });

  it('filters by sender (any case, or @domain), recipient and queue, and pages the matches', async () => {
    const senders = async (f: Parameters<QueueService['list']>[0]) => (await queue.list(f, all)).items.map((e) => e.sender.toLowerCase()).sort();
    expect(await senders({ sender: 'ALICE@one.test' })).toEqual(['alice@one.test']);
    expect(await senders({ sender: '@one.test' })).toEqual(['alice@one.test', 'carol@one.test']);
    expect(await senders({ sender: 'one.test' })).toEqual([]);
    expect(await senders({ recipient: 'r3@x.test' })).toEqual(['bob@two.test']);
    expect(await senders({ recipient: '@x.test' })).toEqual(['alice@one.test', 'bob@two.test']);
    expect(await senders({ queue: 'hold' })).toEqual([]);
    expect(await senders({ queue: 'deferred', sender: '@two.test' })).toEqual(['bob@two.test']);
    const first = await queue.list({}, { limit: 2, offset: 0 });
    const second = await queue.list({}, { limit: 2, offset: 2 });
    expect([first.total, first.items.length, second.total, second.items.length]).toEqual([3, 2, 3, 1]);
    expect(new Set([...first.items, ...second.items].map((e) => e.queue_id)).size).toBe(3);
    expect(await queue.counts()).toEqual({ maildrop: 0, incoming: 0, active: 0, deferred: 3, hold: 0 });
  });

  it('holds and releases one message; a second hold is 409, a release of a queued one 409, an unknown id 404', async () => {
    const id = ids.get('alice@one.test') ?? '';
    expect(await queue.hold(id)).toEqual({ queue_id: id, action: 'held' });
    expect((await pf.queue()).find((m) => m.queue_id === id)?.queue_name).toBe('hold');
    expect(await codeOf(queue.hold(id))).toBe('conflict');
    expect(await queue.counts()).toMatchObject({ deferred: 2, hold: 1 });
    expect(await queue.release(id)).toEqual({ queue_id: id, action: 'released' });
    expect((await pf.queue()).find((m) => m.queue_id === id)?.queue_name).toBe('deferred');
    expect(await codeOf(queue.release(id))).toBe('conflict');
    expect(await codeOf(queue.hold('ABCDEF12345'))).toBe('not_found');
    expect(await codeOf(queue.release('ABCDEF12345'))).toBe('not_found');
  });

  it('deletes one message (postsuper reporting "Deleted: 0" is 404, not success)', async () => {
    const id = ids.get('bob@two.test') ?? '';
    expect(await queue.delete(id)).toEqual({ queue_id: id, action: 'deleted' });
    expect((await pf.queue()).map((m) => m.queue_id)).not.toContain(id);
    expect((await pf.queue()).length).toBe(2);
    expect(await codeOf(queue.delete(id))).toBe('not_found');
  });

  it('bulk delete: a dry run counts and changes nothing; the real one removes exactly the matches', async () => {
    expect(await queue.deleteMatching({ sender: '@one.test' }, { dryRun: true })).toEqual({ count: 2 });
    expect((await pf.queue()).length).toBe(3);
    expect(await queue.deleteMatching({ sender: '@one.test', recipient: 'r4@z.test' }, {})).toEqual({ count: 1 });
    expect((await pf.queue()).map((m) => m.sender.toLowerCase()).sort()).toEqual(['alice@one.test', 'bob@two.test']);
    expect(await codeOf(queue.deleteMatching({}, {}))).toBe('validation');
    expect((await pf.queue()).length).toBe(2);
  });

  it('bulk delete by age: only messages that arrived longer ago than older_than', async () => {
    expect(await queue.deleteMatching({ olderThanSeconds: 3600 }, { dryRun: true })).toEqual({ count: 0 });
    now += 2 * 3600 * 1000;
    expect(await queue.deleteMatching({ olderThanSeconds: 3600, sender: 'alice@one.test' }, {})).toEqual({ count: 1 });
    expect((await pf.queue()).length).toBe(2);
  });

  it('bounce returns the message to its sender: the original leaves the queue and a DSN to the sender appears', async () => {
    const id = ids.get('carol@one.test') ?? '';
    await queue.hold(id);
    expect(await queue.delete(id, { bounce: true })).toEqual({ queue_id: id, action: 'bounced' });
    await expect.poll(async () => (await pf.queue()).map((m) => m.queue_id), { timeout: 20_000, interval: 200 }).not.toContain(id);
    const dsn = await pf.settle(3);
    expect(dsn.filter((m) => m.sender === 'MAILER-DAEMON').map((m) => m.recipients.map((r) => r.address))).toEqual([['Carol@One.test']]);
    expect(pf.logs()).toMatch(new RegExp(`${id}: from=<Carol@One.test>, status=force-expired, returned to sender`));
    expect(pf.logs()).toMatch(new RegExp(`${id}: sender non-delivery notification: `));
  }, 30_000);

  it('bulk bounce returns every match and counts them', async () => {
    expect(await queue.deleteMatching({ sender: '@one.test' }, { bounce: true })).toEqual({ count: 2 });
    await expect.poll(async () => (await pf.queue()).filter((m) => m.sender === 'MAILER-DAEMON').length, { timeout: 20_000, interval: 200 }).toBe(2);
    expect((await pf.queue()).filter((m) => m.sender !== 'MAILER-DAEMON').map((m) => m.sender)).toEqual(['bob@two.test']);
  }, 30_000);
});

describe.skipIf(unavailable !== null)('long queue ids (enable_long_queue_ids = yes)', () => {
  let pf: QueuePostfix;
  beforeAll(async () => {
    pf = await startQueuePostfix({ longQueueIds: true });
  }, 60_000);
  afterAll(async () => {
    await pf?.stop();
  });

  it('lists, holds, releases and deletes messages by their long ids', async () => {
    const queue = serviceFor(pf);
    await pf.send([{ from: 'a@long.test', to: ['b@x.test'] }]);
    const [m] = await pf.settle(1);
    const id = m?.queue_id ?? '';
    expect(id).toMatch(/^[0-9A-Za-z]{10,}z[0-9A-Za-z]+$/);
    expect((await queue.list({}, all)).items.map((e) => e.queue_id)).toEqual([id]);
    await queue.hold(id);
    expect((await pf.queue())[0]?.queue_name).toBe('hold');
    await queue.release(id);
    await queue.delete(id);
    expect(await pf.queue()).toEqual([]);
    expect(await codeOf(queue.delete(id))).toBe('not_found');
  });
});
