import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { ExecError } from '../../adapters/exec.js';
import { DAEMON_RETRY_AFTER, notInstalled, notRunning, postfixNotConfigured } from '../../shared/daemon-hints.js';
import { PostqueueFormatError, StartedPostqueue, flushQueue, postsuperCount, postsuperIds, scanQueue, scheduleNow } from '../../adapters/postfix/postqueue.js';
import type { PostqueueMessage } from '../../adapters/postfix/postqueue.js';
import type { HelperClient } from '../../adapters/helper-client.js';
import type { Settings } from '../../config/settings.js';
import type { Clock } from '../../shared/clock.js';
import { AppError } from '../../shared/errors.js';
import type { Page } from '../../shared/paging.js';
import { QUEUE_ID_BATCH, QUEUE_NAMES, QueueIdError, parseQueueId } from '../../shared/queue-id.js';
import type { QueueName } from '../../shared/queue-id.js';
import type { QueueAction, QueueBatch, QueueBatchResult, QueueCount, QueueCounts, QueueEntry, QueuePage } from './schema.js';
import { QUEUE_SORT } from './schema.js';
import { sortOf } from '../sort.schema.js';
import { byQueueSort, firstInOrder } from './queue-sort.js';

export type QueueFilter = { queue?: QueueName | undefined; sender?: string | undefined; recipient?: string | undefined };
export type BulkFilter = QueueFilter & { olderThanSeconds?: number | undefined };
export type BulkOptions = { dryRun?: boolean; bounce?: boolean; onProgress?: (done: number, total: number) => void };

/** Each batch action: the helper's verb, postsuper's count line, the answer's word. */
const BATCH = {
  hold: ['postsuper-hold', 'Placed on hold', 'held'],
  release: ['postsuper-release', 'Released from hold', 'released'],
  delete: ['postsuper-delete', 'Deleted', 'deleted'],
} as const;

/** Above this many bounced messages one `postqueue -f` replaces a `postqueue -i` per message. */
const SCHEDULE_EACH_MAX = 50;

const validation = (field: string, detail: string): AppError => new AppError('validation', `${field}: ${detail}`, { errors: [{ path: `/${field}`, message: detail }] });

/** The id, or a 422 naming the field: nothing runs with an id that is not a Postfix queue id. */
export function queueIdOf(raw: string): string {
  try {
    return parseQueueId(raw);
  } catch (err) {
    if (err instanceof QueueIdError) throw validation('queue_id', err.message);
    throw err;
  }
}

/** A sender/recipient filter: the whole address (any case), or `@domain` for a domain's addresses. */
function addressMatcher(field: string, raw: string | undefined): ((address: string) => boolean) | null {
  if (raw === undefined) return null;
  const want = raw.trim().toLowerCase();
  if (want === '' || want.length > 320 || /\s/.test(want) || [...want].some((c) => c.charCodeAt(0) < 0x20)) throw validation(field, 'give an address, or @domain');
  return want.startsWith('@') ? (a) => a.toLowerCase().endsWith(want) : (a) => a.toLowerCase() === want;
}

function present(m: PostqueueMessage): QueueEntry {
  return {
    queue_id: m.queue_id,
    queue_name: (QUEUE_NAMES as readonly string[]).includes(m.queue_name) ? (m.queue_name as QueueName) : 'incoming',
    arrival_time: new Date(m.arrival_time * 1000).toISOString(),
    message_size: m.message_size,
    sender: m.sender,
    recipients: m.recipients.map((r) => ({ address: r.address, delay_reason: r.delay_reason ?? null })),
  };
}

/**
 * `postqueue -j` started from the settings alone, before the service is built:
 * the CLI's `queue list` and `queue counts` start it as soon as the settings are
 * read (the runner's early start, docs/performance.md) and hand it to `list`
 * or `counts`, so postqueue runs while the rest of the command loads.
 */
export function startQueueRead(settings: Pick<Settings, 'helper'>): StartedPostqueue {
  return new StartedPostqueue(settings.helper.postfixConfigDir);
}

/**
 * The Postfix mail queue: read with `postqueue -j` (no root needed), changed
 * with `postsuper` through the privileged helper. Filtering and paging happen
 * while postqueue's output streams in, so memory does not grow with the queue.
 */
/** Tries of a postsuper action on a message that the queue manager is moving (it is listed, but postsuper missed it). */
const MOVING_ATTEMPTS = 3;

export class QueueService {
  constructor(
    private readonly configDir: string,
    private readonly helper: HelperClient,
    private readonly clock: Clock,
  ) {}

  /**
   * Calls `visit` with every queue entry matching the filter, as postqueue
   * prints them; false from `visit` stops. `started`: a postqueue started
   * before the service was built (startQueueRead), read instead of a new one.
   */
  private async scan(filter: BulkFilter, visit: (m: PostqueueMessage) => boolean | void, started?: StartedPostqueue): Promise<void> {
    const sender = addressMatcher('sender', filter.sender);
    const recipient = addressMatcher('recipient', filter.recipient);
    const before = filter.olderThanSeconds === undefined ? null : this.clock.now() / 1000 - filter.olderThanSeconds;
    try {
      await scanQueue(this.configDir, (m) => {
        if (filter.queue !== undefined && m.queue_name !== filter.queue) return;
        if (sender && !sender(m.sender)) return;
        if (recipient && !m.recipients.some((r) => recipient(r.address))) return;
        if (before !== null && !(m.arrival_time < before)) return;
        return visit(m);
      }, { started });
    } catch (err) {
      if (err instanceof ExecError) throw this.postqueueFailure(err);
      if (err instanceof PostqueueFormatError) throw new AppError('upstream', err.message);
      throw err;
    }
  }

  /**
   * postqueue's failure as the one rule for an absent daemon says it: not
   * installed, no main.cf in the configuration directory, or the mail system
   * down (postqueue's exit 69) is `unavailable` (503 / exit 69) with what to
   * install or start; anything else is `upstream`.
   */
  private postqueueFailure(err: ExecError): AppError {
    const absent = (detail: string) => new AppError('unavailable', detail, { retryAfter: DAEMON_RETRY_AFTER });
    if (err.kind === 'not-found') return absent(notInstalled('postqueue'));
    if (!existsSync(join(this.configDir, 'main.cf'))) return absent(postfixNotConfigured(this.configDir));
    if (err.kind === 'exit' && err.code === 69) return absent(notRunning('postfix', 'postqueue: the mail system is down'));
    return new AppError('upstream', `cannot read the mail queue: ${err.message}`);
  }

  /**
   * A page of the matching messages in postqueue's order; with `sort`, the
   * first offset+limit in that order are kept while postqueue streams (ties
   * by queue id), so memory grows with the page asked for, not the queue.
   * `started`: see startQueueRead.
   */
  async list(filter: QueueFilter, page: Page, sort?: string, started?: StartedPostqueue): Promise<QueuePage> {
    const order = sortOf(sort, QUEUE_SORT);
    const items: QueueEntry[] = [];
    let total = 0;
    if (order) {
      const best = firstInOrder(byQueueSort(order), page.offset + page.limit);
      await this.scan(filter, (m) => {
        total += 1;
        best.offer(m);
      }, started);
      return { items: best.items().slice(page.offset).map(present), total, limit: page.limit, offset: page.offset };
    }
    await this.scan(filter, (m) => {
      if (total >= page.offset && items.length < page.limit) items.push(present(m));
      total += 1;
    }, started);
    return { items, total, limit: page.limit, offset: page.offset };
  }

  /** How many messages each queue holds (for metrics and `queue counts`). */
  async counts(started?: StartedPostqueue): Promise<QueueCounts> {
    const counts = Object.fromEntries(QUEUE_NAMES.map((n) => [n, 0])) as QueueCounts;
    await this.scan({}, (m) => {
      if (m.queue_name in counts) counts[m.queue_name as QueueName] += 1;
    }, started);
    return counts;
  }

  private async find(id: string): Promise<PostqueueMessage | null> {
    let found: PostqueueMessage | null = null;
    await this.scan({}, (m) => {
      if (m.queue_id !== id) return true;
      found = m;
      return false;
    });
    return found;
  }

  /** Runs one postsuper action on a batch of ids through the helper; its stderr says what was done. */
  private async postsuper(action: string, ids: readonly string[]): Promise<string> {
    return (await this.helper.run(action, [ids.join(',')])).stderr;
  }

  /** postsuper's count for one action; a postsuper that does not report one is not trusted. */
  private async counted(action: string, ids: readonly string[], label: Parameters<typeof postsuperCount>[1]): Promise<number> {
    const n = postsuperCount(await this.postsuper(action, ids), label);
    if (n === null) throw new AppError('upstream', `postsuper did not report how many messages it changed ("${label}: N messages")`);
    return n;
  }

  /**
   * One postsuper action on one message. When it did nothing: the id is not in
   * the queue (404), or it is but in the wrong state (409). A message the
   * queue manager is moving between queues at that instant (just released,
   * deferred → active) is missed by postsuper while postqueue still lists it:
   * that case is tried again, briefly, before it is called a conflict.
   */
  private async once(action: string, id: string, label: Parameters<typeof postsuperCount>[1], conflict: (m: PostqueueMessage) => string | null): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      if ((await this.counted(action, [id], label)) > 0) return;
      const m = await this.find(id);
      if (!m) throw new AppError('not_found', `no message ${id} in the mail queue`);
      const why = conflict(m);
      if (why) throw new AppError('conflict', why);
      if (attempt === MOVING_ATTEMPTS) throw new AppError('conflict', `message ${id} is being moved by Postfix's queue manager; try again`);
      await new Promise((r) => setTimeout(r, 100 * attempt));
    }
  }

  async hold(rawId: string): Promise<QueueAction> {
    const id = queueIdOf(rawId);
    await this.once('postsuper-hold', id, 'Placed on hold', (m) => (m.queue_name === 'hold' ? `message ${id} is already on hold` : null));
    return { queue_id: id, action: 'held' };
  }

  async release(rawId: string): Promise<QueueAction> {
    const id = queueIdOf(rawId);
    await this.once('postsuper-release', id, 'Released from hold', (m) => (m.queue_name === 'hold' ? null : `message ${id} is not on hold (it is in the ${m.queue_name} queue)`));
    return { queue_id: id, action: 'released' };
  }

  /**
   * Holds, releases or deletes the messages named by id, in one postsuper
   * run; answers how many postsuper changed (ids gone meanwhile, or already
   * in that state, are not). Every id is checked first: one bad id, nothing runs.
   */
  async batch(action: QueueBatch['action'], rawIds: readonly string[]): Promise<QueueBatchResult> {
    const ids = [...new Set(rawIds.map((raw, i) => {
      try {
        return parseQueueId(raw);
      } catch (err) {
        if (err instanceof QueueIdError) throw new AppError('validation', `ids.${i}: ${err.message}`, { errors: [{ path: `body.ids.${i}`, message: err.message }] });
        throw err;
      }
    }))];
    const [verb, label, done] = BATCH[action];
    let count = 0;
    for (let i = 0; i < ids.length; i += QUEUE_ID_BATCH) count += await this.counted(verb, ids.slice(i, i + QUEUE_ID_BATCH), label);
    return { action: done, requested: ids.length, count };
  }

  /** Drops the message without a word to its sender; with `bounce`, returns it to the sender instead. */
  async delete(rawId: string, opts: { bounce?: boolean } = {}): Promise<QueueAction> {
    const id = queueIdOf(rawId);
    if (opts.bounce) {
      // postsuper -f on a message that is already expired reports nothing: look the message up instead.
      if (!(await this.find(id))) throw new AppError('not_found', `no message ${id} in the mail queue`);
      await this.bounce([id]);
      return { queue_id: id, action: 'bounced' };
    }
    await this.once('postsuper-delete', id, 'Deleted', () => null);
    return { queue_id: id, action: 'deleted' };
  }

  /**
   * Postfix has no "bounce this message" command. `postsuper -f` marks it
   * expired (and releases it from hold); at its next delivery attempt the
   * queue manager returns it to the sender with a non-delivery notice.
   * `postqueue -i` makes that attempt now rather than at the next queue run.
   */
  private async bounce(ids: readonly string[]): Promise<number> {
    const done = postsuperIds(await this.postsuper('postsuper-expire', ids));
    if (ids.length <= SCHEDULE_EACH_MAX) for (const id of ids) await scheduleNow(this.configDir, id).catch(() => undefined);
    return done.size;
  }

  /**
   * Deletes (or bounces) every message matching the filter, in batches; a dry
   * run counts them. At least one filter is required: emptying the whole
   * queue takes `postsuper -d ALL` on the host, on purpose.
   */
  async deleteMatching(filter: BulkFilter, opts: BulkOptions = {}): Promise<QueueCount> {
    if (filter.queue === undefined && filter.sender === undefined && filter.recipient === undefined && filter.olderThanSeconds === undefined) {
      throw validation('filter', 'give at least one of sender, recipient, older_than, queue');
    }
    const ids: string[] = [];
    await this.scan(filter, (m) => {
      ids.push(m.queue_id);
    });
    if (opts.dryRun) return { count: ids.length };
    let count = 0;
    for (let i = 0; i < ids.length; i += QUEUE_ID_BATCH) {
      const batch = ids.slice(i, i + QUEUE_ID_BATCH);
      count += opts.bounce ? await this.bounce(batch) : await this.counted('postsuper-delete', batch, 'Deleted');
      opts.onProgress?.(Math.min(i + QUEUE_ID_BATCH, ids.length), ids.length);
    }
    if (opts.bounce && ids.length > SCHEDULE_EACH_MAX) await flushQueue(this.configDir).catch(() => undefined);
    return { count };
  }
}

const UNIT: Record<string, number> = { '': 1, s: 1, m: 60, h: 3600, d: 86400, w: 604800 };

/** `older_than`: seconds, or a number with s, m, h, d or w. */
export function durationSeconds(field: string, raw: string): number {
  const m = /^(\d{1,9})([smhdw]?)$/.exec(raw.trim());
  if (!m) throw validation(field, 'use seconds or a duration such as 30m, 4h, 2d, 1w');
  return Number(m[1]) * (UNIT[m[2] ?? ''] ?? 1);
}
