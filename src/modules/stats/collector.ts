import type { EventSink, LogEvent } from './postfix-log.js';

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
export class MessageJoiner implements EventSink {
  private readonly pending: Map<string, Pending>;
  /** The time of the last event that had one: the time of the lines being read. */
  lastAt = 0;

  /** `out` gets the rows of each message completed (see scan-time use in StatsService.collect). */
  constructor(saved: Record<string, Pending> = {}, private out: (rows: readonly StatsRow[]) => void = () => undefined) {
    this.pending = new Map(Object.entries(saved));
  }

  /** Feeds one event; returns the rows of a message it completes. */
  add(e: LogEvent): readonly StatsRow[] {
    let got: readonly StatsRow[] = NONE;
    const out = this.out;
    this.out = (rows) => {
      got = rows;
    };
    try {
      switch (e.kind) {
        case 'client':
          this.client(e.qid, e.authenticated);
          break;
        case 'pickup':
          this.pickup(e.qid);
          break;
        case 'from':
          this.from(e.qid, e.at, e.sender, e.size);
          break;
        case 'delivered':
          this.delivered(e.qid, e.at, e.recipient, e.local);
          break;
        case 'removed':
          this.removed(e.qid, e.at);
          break;
      }
    } finally {
      this.out = out;
    }
    return got;
  }

  private open(qid: string, seen: number): Pending {
    let p = this.pending.get(qid);
    if (!p) {
      p = { local: [], remote: false, seen };
      this.pending.set(qid, p);
    }
    return p;
  }

  client(qid: string, authenticated: boolean): void {
    this.open(qid, Date.now()).ours = authenticated;
  }

  pickup(qid: string): void {
    this.open(qid, Date.now()).ours = true;
  }

  from(qid: string, at: number, sender: string, size: number): void {
    this.lastAt = at;
    const p = this.open(qid, at);
    p.at = at;
    // Only our own senders are kept (they get the outbound row): a remote address is never stored, not even in the state.
    if (p.ours) p.sender = sender;
    p.size = size;
    p.seen = at;
  }

  delivered(qid: string, at: number, recipient: string, local: boolean): void {
    this.lastAt = at;
    const p = this.open(qid, at);
    if (local) {
      if (!p.local.includes(recipient)) p.local.push(recipient);
    } else p.remote = true;
  }

  removed(qid: string, at: number): void {
    this.lastAt = at;
    const p = this.pending.get(qid);
    if (!p) return;
    this.pending.delete(qid);
    const rows = rowsOf(qid, p);
    if (rows.length > 0) this.out(rows);
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

/** Character codes of the hex digits. */
const HEX = [48, 49, 50, 51, 52, 53, 54, 55, 56, 57, 97, 98, 99, 100, 101, 102];
const hex = (x: number, shift: number): number => HEX[(x >>> shift) & 15] ?? 48;

/**
 * A message's key: its arrival time (ms, 12 hex digits) and a 52-bit hash of
 * its queue id (13 hex digits). Queue ids are reused; with the arrival time
 * they name one message. The time leads so keys grow with time and the key
 * index is appended to, not rewritten all over (random keys made a big log's
 * first run write its database many times over); the queue id is hashed so
 * nothing of the log is kept. A fast non-cryptographic hash (two 32-bit
 * FNV-1a lanes) is enough: only two messages that arrived in the same
 * millisecond could collide, with odds of about 2^-52. The digits are written
 * from the lanes' bits (Number#toString(16) is slow on numbers past 31 bits).
 */
export function messageKey(qid: string, at: number): string {
  // The time's 48 bits as 16 high and 32 low (ToUint32 keeps the low 32 of an integer up to 2^53).
  const hi = Math.floor(at / 0x100000000);
  const lo = at >>> 0;
  let h1 = 0x811c9dc5;
  let h2 = 0x050c5d1f;
  for (let i = 0; i < qid.length; i++) {
    const c = qid.charCodeAt(i);
    h1 = Math.imul(h1 ^ c, 0x01000193);
    h2 = Math.imul(h2 ^ c, 0x01000193) ^ (h2 >>> 15);
  }
  // All 32 bits of one lane and 20 of the other.
  return String.fromCharCode(
    hex(hi, 12), hex(hi, 8), hex(hi, 4), hex(hi, 0),
    hex(lo, 28), hex(lo, 24), hex(lo, 20), hex(lo, 16), hex(lo, 12), hex(lo, 8), hex(lo, 4), hex(lo, 0),
    hex(h1, 28), hex(h1, 24), hex(h1, 20), hex(h1, 16), hex(h1, 12), hex(h1, 8), hex(h1, 4), hex(h1, 0),
    hex(h2, 16), hex(h2, 12), hex(h2, 8), hex(h2, 4), hex(h2, 0),
  );
}

function rowsOf(qid: string, p: Pending): readonly StatsRow[] {
  // Without its `from=` line (read before the first run, or lost) a message has no size or time: not counted.
  if (p.at === undefined || p.size === undefined) return NONE;
  const at = p.at;
  const size = p.size;
  const msg_key = messageKey(qid, at);
  const direction: Direction = p.ours ? 'local' : 'inbound';
  const rows: StatsRow[] = [];
  for (const mailbox of p.local) rows.push({ msg_key, mailbox, direction, size, at });
  if (p.ours && p.remote && p.sender && !p.local.includes(p.sender)) rows.push({ msg_key, mailbox: p.sender, direction: 'outbound', size, at });
  return rows;
}
