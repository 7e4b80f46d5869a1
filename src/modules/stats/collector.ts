import { createHash } from 'node:crypto';
import type { LogEvent } from './postfix-log.js';

export type Direction = 'inbound' | 'outbound' | 'local';
export const DIRECTIONS: readonly Direction[] = ['inbound', 'outbound', 'local'];

/** One message as one mailbox saw it: what the statistics keep, and nothing else. */
export type StatsRow = { msg_key: string; mailbox: string; direction: Direction; size: number; at: number };

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
  add(e: LogEvent): StatsRow[] {
    let p = this.pending.get(e.qid);
    if (!p) {
      if (e.kind === 'removed') return [];
      p = { local: [], remote: false, seen: 'at' in e ? e.at : Date.now() };
      this.pending.set(e.qid, p);
    }
    switch (e.kind) {
      case 'client':
        p.ours = e.authenticated;
        return [];
      case 'pickup':
        p.ours = true;
        return [];
      case 'from':
        p.at = e.at;
        // Only our own senders are kept (they get the outbound row): a remote address is never stored, not even in the state.
        if (p.ours) p.sender = e.sender;
        p.size = e.size;
        p.seen = e.at;
        return [];
      case 'delivered':
        if (e.local) {
          if (!p.local.includes(e.recipient)) p.local.push(e.recipient);
        } else p.remote = true;
        return [];
      case 'removed':
        this.pending.delete(e.qid);
        return rowsOf(e.qid, p);
    }
  }

  /** What to keep for the next run: open messages, without the ones too old to finish. */
  save(now: number): Record<string, Pending> {
    const keep = [...this.pending].filter(([, p]) => now - p.seen < (p.at === undefined ? UNQUEUED_MAX_AGE_MS : PENDING_MAX_AGE_MS));
    return Object.fromEntries(keep.slice(-PENDING_MAX));
  }
}

function rowsOf(qid: string, p: Pending): StatsRow[] {
  // Without its `from=` line (read before the first run, or lost) a message has no size or time: not counted.
  if (p.at === undefined || p.size === undefined) return [];
  const at = p.at;
  const size = p.size;
  // Queue ids are reused; with the arrival time they name one message. Hashed so nothing of the log is kept,
  // behind the arrival time in hex: keys then grow with time, and the key index is appended to, not
  // rewritten all over (random keys made a big log's first run write its database many times over).
  const msg_key = at.toString(16).padStart(12, '0') + createHash('sha256').update(`${qid}\n${at}`).digest('hex').slice(0, 20);
  const rows: StatsRow[] = p.local.map((mailbox) => ({ msg_key, mailbox, direction: p.ours ? 'local' : 'inbound', size, at }));
  if (p.ours && p.remote && p.sender && !p.local.includes(p.sender)) rows.push({ msg_key, mailbox: p.sender, direction: 'outbound', size, at });
  return rows;
}
