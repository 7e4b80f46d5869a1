import { hash } from 'node:crypto';
import type { LogEvent } from './postfix-log.js';

export type Direction = 'inbound' | 'outbound' | 'local';
export const DIRECTIONS: readonly Direction[] = ['inbound', 'outbound', 'local'];

/** One message as one mailbox saw it: what the statistics keep, and nothing else. */
export type StatsRow = { msg_key: string; mailbox: string; direction: Direction; size: number; at: number };

/** What `stats collect` writes its rows through (RowWriter, or SqliteThreadWriter on SQLite). */
export interface CollectWriter {
  /** Adds rows to the next batch. */
  push(rows: readonly StatsRow[]): void;
  /** Writes the batch. */
  flush(): Promise<void>;
  /** Writes what is left and saves the collector's state with it; returns the rows the run added. */
  finish(stateJson: string, now: number): Promise<number>;
  /** Gives up: an open bulk load is rolled back. */
  abort(): Promise<void>;
  readonly isBulk: boolean;
}

/** A message whose lines are not all read yet (kept between runs). */
type Pending = {
  /** Submitted by an authenticated client or picked up from the local sendmail: one of ours. */
  ours?: boolean;
  at?: number;
  sender?: string;
  size?: number;
  /** Recipient copies delivered: local mailboxes, and whether any copy went elsewhere. */
  local: string[];
  remote: boolean;
  seen: number;
};

/** What most lines complete: nothing (one shared empty list, not a new one per line). */
const NONE: readonly StatsRow[] = Object.freeze([]);

/** Messages still open after this long (never removed from the queue) are dropped from the state. */
const PENDING_MAX_AGE_MS = 30 * 86_400_000;
/** A queue id seen without its queue manager line (rejected after the client connected) is dropped sooner. */
const UNQUEUED_MAX_AGE_MS = 86_400_000;
/** At most this many open messages are kept between runs (the newest), so a flood of rejects cannot grow the state. */
const PENDING_MAX = 100_000;

/**
 * Joins the log's lines by queue id into rows, emitted when the queue
 * manager removes the message (all its copies are then delivered, bounced
 * or expired). Direction: a copy delivered into a local mailbox is `local`
 * when the message came from one of ours (authenticated or local
 * submission), else `inbound`; a message of ours with a copy delivered
 * elsewhere adds one `outbound` row for its sender.
 */
export class MessageJoiner {
  private readonly pending: Map<string, Pending>;

  constructor(saved: Record<string, Pending> = {}) {
    this.pending = new Map(Object.entries(saved));
  }

  /** Feeds one event; returns the rows of a message it completes. */
  add(e: LogEvent): readonly StatsRow[] {
    let p = this.pending.get(e.qid);
    if (!p) {
      if (e.kind === 'removed') return NONE;
      p = { local: [], remote: false, seen: 'at' in e ? e.at : Date.now() };
      this.pending.set(e.qid, p);
    }
    switch (e.kind) {
      case 'client':
        p.ours = e.authenticated;
        return NONE;
      case 'pickup':
        p.ours = true;
        return NONE;
      case 'from':
        p.at = e.at;
        // Only our own senders are kept (they get the outbound row): a remote address is never stored, not even in the state.
        if (p.ours) p.sender = e.sender;
        p.size = e.size;
        p.seen = e.at;
        return NONE;
      case 'delivered':
        if (e.local) {
          if (!p.local.includes(e.recipient)) p.local.push(e.recipient);
        } else p.remote = true;
        return NONE;
      case 'removed':
        this.pending.delete(e.qid);
        return rowsOf(e.qid, p);
    }
  }

  /** Open messages now. */
  get size(): number {
    return this.pending.size;
  }

  /**
   * Keeps the open messages within bounds while a big log is read (memory
   * stays flat whatever the log holds): when there are more than the limit,
   * the ones too old to finish by `now` (the time of the lines being read)
   * go, then the oldest until the limit holds.
   */
  trim(now: number, max = PENDING_MAX): void {
    if (this.pending.size <= max) return;
    for (const [qid, p] of this.pending) if (stale(p, now)) this.pending.delete(qid);
    // A Map iterates in insertion order: the first entries are the oldest messages.
    for (const qid of this.pending.keys()) {
      if (this.pending.size <= max) break;
      this.pending.delete(qid);
    }
  }

  /** What to keep for the next run: open messages, without the ones too old to finish. */
  save(now: number): Record<string, Pending> {
    const keep = [...this.pending].filter(([, p]) => !stale(p, now));
    return Object.fromEntries(keep.slice(-PENDING_MAX));
  }
}

function stale(p: Pending, now: number): boolean {
  return now - p.seen >= (p.at === undefined ? UNQUEUED_MAX_AGE_MS : PENDING_MAX_AGE_MS);
}

function rowsOf(qid: string, p: Pending): readonly StatsRow[] {
  // Without its `from=` line (read before the first run, or lost) a message has no size or time: not counted.
  if (p.at === undefined || p.size === undefined) return NONE;
  const at = p.at;
  const size = p.size;
  // Queue ids are reused; with the arrival time they name one message. Hashed so nothing of the log is kept,
  // behind the arrival time in hex: keys then grow with time, and the key index is appended to, not
  // rewritten all over (random keys made a big log's first run write its database many times over).
  const msg_key = at.toString(16).padStart(12, '0') + hash('sha256', `${qid}\n${at}`, 'hex').slice(0, 20);
  const rows: StatsRow[] = p.local.map((mailbox) => ({ msg_key, mailbox, direction: p.ours ? 'local' : 'inbound', size, at }));
  if (p.ours && p.remote && p.sender && !p.local.includes(p.sender)) rows.push({ msg_key, mailbox: p.sender, direction: 'outbound', size, at });
  return rows;
}
