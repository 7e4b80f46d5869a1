/**
 * Reads Postfix log lines into the few facts the statistics need. Both
 * timestamp shapes syslog writers use: classic `Nov 23 15:44:11` (no year,
 * local time, English month names whatever the locale) and RFC 3339
 * `2026-11-23T15:44:11.123456+00:00` (rsyslog on Debian), also with the
 * offset without its colon, `+0000`, as `journalctl -o short-iso-precise`
 * prints it (systemd 252, Debian 12).
 * Anything else is skipped: the collector ignores what it does not need.
 *
 * Built for speed on big logs: a chunk of the file is decoded once as latin1
 * (one character per byte, so a character index is a byte offset), lines are
 * found with indexOf, and a line is refused from its program name (the few
 * characters before `[pid]:`) before its timestamp is read or anything is cut
 * out of it. Only the fields kept (queue id, an address, a size) become
 * strings; an address with bytes past ASCII is decoded from the file's bytes
 * as UTF-8.
 */

export type LogEvent =
  | { kind: 'client'; qid: string; authenticated: boolean }
  | { kind: 'pickup'; qid: string }
  | { kind: 'from'; qid: string; at: number; sender: string; size: number }
  | { kind: 'delivered'; qid: string; at: number; recipient: string; local: boolean }
  | { kind: 'removed'; qid: string; at: number };

/**
 * Turns a classic timestamp (no year) into epoch ms: the year that puts it
 * on or before `reference` (+1 day for clock skew), so December lines read
 * in January fall in the old year.
 */
export function classicTime(month: number, day: number, h: number, m: number, s: number, reference: Date): number {
  const year = reference.getFullYear();
  const t = new Date(year, month, day, h, m, s).getTime();
  return t > reference.getTime() + 86_400_000 ? new Date(year - 1, month, day, h, m, s).getTime() : t;
}

const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];

// Character codes.
const SP = 32;
const COLON = 58;
const BRACKET_CLOSE = 93;
const BRACKET_OPEN = 91;
const SLASH = 47;
const ZERO = 48;
const NINE = 57;
const COMMA = 44;

const isDigit = (c: number) => c >= ZERO && c <= NINE;
const isAlnum = (c: number) => (c >= ZERO && c <= NINE) || (c >= 65 && c <= 90) || (c >= 97 && c <= 122);

/** Two digits at `i` as a number, or -1. */
function two(s: string, i: number): number {
  const a = s.charCodeAt(i);
  const b = s.charCodeAt(i + 1);
  return isDigit(a) && isDigit(b) ? (a - ZERO) * 10 + (b - ZERO) : -1;
}

/**
 * What a service name at [from, to) is, when it is one the statistics read.
 * Delivery agents that put mail into a local mailbox: lmtp, virtual, local;
 * agents whose `status=sent` copies went elsewhere: smtp, pipe, discard.
 */
const enum Service {
  None,
  Qmgr,
  Smtpd,
  Pickup,
  LocalAgent,
  RemoteAgent,
}

function serviceAt(s: string, from: number, to: number): Service {
  switch (to - from) {
    case 4:
      if (s.startsWith('qmgr', from)) return Service.Qmgr;
      if (s.startsWith('lmtp', from)) return Service.LocalAgent;
      if (s.startsWith('smtp', from) || s.startsWith('pipe', from)) return Service.RemoteAgent;
      return Service.None;
    case 5:
      if (s.startsWith('smtpd', from)) return Service.Smtpd;
      if (s.startsWith('local', from)) return Service.LocalAgent;
      return Service.None;
    case 6:
      return s.startsWith('pickup', from) ? Service.Pickup : Service.None;
    case 7:
      if (s.startsWith('virtual', from)) return Service.LocalAgent;
      if (s.startsWith('discard', from)) return Service.RemoteAgent;
      return Service.None;
    default:
      return Service.None;
  }
}

/**
 * Reads lines of one file. `reference` is the time year-less timestamps are
 * placed before (the file's last change). Keeps the last timestamp's value:
 * a busy log writes many lines per second and Date math is the costly part.
 */
export class LineScanner {
  private lastStamp = '';
  private lastAt = 0;
  constructor(private readonly reference: Date) {}

  /**
   * The event of the line s[start, end) (no newline), or null. `bytes` are
   * the bytes `s` was decoded from as latin1 (s[i] is bytes[i]), used to
   * decode addresses that are not ASCII; without them such an address is
   * taken as it is in `s`.
   */
  line(s: string, start: number, end: number, bytes?: Buffer): LogEvent | null {
    const sink = new EventBuilder();
    return this.scan(s, start, end, bytes, sink) ? sink.event : null;
  }

  /**
   * Like line(), but hands the event's fields to `sink` (no event object: a
   * big log has millions of lines); true when the line was an event.
   */
  scan(s: string, start: number, end: number, bytes: Buffer | undefined, sink: EventSink): boolean {
    // The timestamp's end: classic stamps are `Mmm dd hh:mm:ss` (15 characters), RFC 3339 ones end at the first space.
    let p: number;
    const c0 = s.charCodeAt(start);
    if (isDigit(c0)) {
      p = s.indexOf(' ', start);
      if (p < 0 || p >= end) return false;
    } else {
      // `Nov 23 15:44:11`, `Nov  3 15:44:11`, or (some writers) `Nov 3 15:44:11`.
      p = start + 15;
      if (s.charCodeAt(p) !== SP) {
        p = start + 14;
        if (s.charCodeAt(p) !== SP) return false;
      }
    }
    // `host tag[pid]: `: the tag ends at the second space after the timestamp.
    const hostEnd = s.indexOf(' ', p + 1);
    if (hostEnd < 0 || hostEnd >= end) return false;
    const tagEnd = s.indexOf(' ', hostEnd + 1);
    if (tagEnd < 0 || tagEnd >= end) return false;
    if (s.charCodeAt(tagEnd - 1) !== COLON || s.charCodeAt(tagEnd - 2) !== BRACKET_CLOSE) return false;
    // `[pid]` backwards from `]`, then the last `/` of the tag before it: both searches stay inside the tag.
    let open = tagEnd - 3;
    while (open > hostEnd && isDigit(s.charCodeAt(open))) open--;
    if (open === tagEnd - 3 || s.charCodeAt(open) !== BRACKET_OPEN) return false;
    let slash = open - 1;
    while (slash > hostEnd + 1 && s.charCodeAt(slash) !== SLASH) slash--;
    if (slash <= hostEnd + 1) return false;
    const service = serviceAt(s, slash + 1, open);
    if (service === Service.None) return false;
    // `QUEUEID: `: six or more letters and digits.
    const q = tagEnd + 1;
    let qe = q;
    while (qe < end && isAlnum(s.charCodeAt(qe))) qe++;
    if (qe - q < 6 || s.charCodeAt(qe) !== COLON || s.charCodeAt(qe + 1) !== SP) return false;
    const m = qe + 2;
    switch (service) {
      case Service.Qmgr: {
        if (end - m === 7 && s.startsWith('removed', m)) {
          const at = this.time(s, start, p);
          if (at < 0) return false;
          sink.removed(s.slice(q, qe), at);
          return true;
        }
        if (!s.startsWith('from=<', m)) return false;
        // Searches stop at the line's end (indexOf may find a later line's `>`: checked against `end`).
        const gt = s.indexOf('>', m + 6);
        if (gt < 0 || gt >= end) return false;
        const sz = s.indexOf(', size=', gt);
        if (sz < 0 || sz >= end) return false;
        let size = 0;
        let i = sz + 7;
        for (; i < end && isDigit(s.charCodeAt(i)); i++) size = size * 10 + s.charCodeAt(i) - ZERO;
        if (i === sz + 7 || i >= end || s.charCodeAt(i) !== COMMA) return false;
        const at = this.time(s, start, p);
        if (at < 0) return false;
        sink.from(s.slice(q, qe), at, address(s, m + 6, gt, bytes), size);
        return true;
      }
      case Service.Smtpd:
        if (!s.startsWith('client=', m)) return false;
        sink.client(s.slice(q, qe), within(s, ', sasl_username=', m, end));
        return true;
      case Service.Pickup:
        if (!s.startsWith('uid=', m)) return false;
        sink.pickup(s.slice(q, qe));
        return true;
      default: {
        if (!s.startsWith('to=<', m)) return false;
        const gt = s.indexOf('>', m + 4);
        if (gt < 0 || gt >= end) return false;
        // Every delivery line has `, status=`; a line without one ends the search at the next line's (refused by `end`).
        const st = s.indexOf(', status=', gt);
        if (st < 0 || st + 14 > end || !s.startsWith('sent ', st + 9)) return false;
        const at = this.time(s, start, p);
        if (at < 0) return false;
        sink.delivered(s.slice(q, qe), at, address(s, m + 4, gt, bytes), service === Service.LocalAgent);
        return true;
      }
    }
  }

  /** The timestamp s[start, end) in epoch ms, or -1 when it is neither shape. */
  private time(s: string, start: number, end: number): number {
    const len = end - start;
    if (len === this.lastStamp.length && s.startsWith(this.lastStamp, start)) return this.lastAt;
    const at = isDigit(s.charCodeAt(start)) ? rfc3339(s, start, end) : classic(s, start, end, this.reference);
    if (at === null) return -1;
    // RFC 3339 stamps carry fractions, so they rarely repeat; classic ones repeat within a second.
    if (len <= 15) {
      this.lastStamp = s.slice(start, end);
      this.lastAt = at;
    }
    return at;
  }
}

/** `Mmm dd hh:mm:ss` (the day padded with a space or a zero, or not padded) between `i` and `end`. */
function classic(s: string, i: number, end: number, reference: Date): number | null {
  const month = MONTHS.indexOf(s.slice(i, i + 3));
  if (month < 0 || s.charCodeAt(i + 3) !== SP) return null;
  // The time is the last 8 characters, the day the one or two before it (after a space).
  const t = end - 8;
  const d2 = s.charCodeAt(t - 2);
  const first = end - i === 15 ? s.charCodeAt(t - 3) : SP;
  if (!isDigit(d2) || !(first === SP || isDigit(first)) || s.charCodeAt(t - 1) !== SP) return null;
  const day = (first === SP ? 0 : (first - ZERO) * 10) + d2 - ZERO;
  const h = two(s, t);
  const min = two(s, t + 3);
  const sec = two(s, t + 6);
  if (s.charCodeAt(t + 2) !== COLON || s.charCodeAt(t + 5) !== COLON || h < 0 || min < 0 || sec < 0 || day < 1) return null;
  return classicTime(month, day, h, min, sec, reference);
}

const RFC3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|[+-]\d{2}:?\d{2})$/;

function rfc3339(s: string, start: number, end: number): number | null {
  let text = s.slice(start, end);
  if (!RFC3339.test(text)) return null;
  // journalctl's `+0100` (ISO 8601's basic offset): Date.parse is only specified for `+01:00`.
  if (text.charCodeAt(text.length - 3) !== COLON && text.charCodeAt(text.length - 1) !== 90) text = `${text.slice(0, -2)}:${text.slice(-2)}`;
  const at = Date.parse(text);
  return Number.isNaN(at) ? null : at;
}

/** The address s[from, to), lower-cased; decoded from `bytes` as UTF-8 when it is not ASCII. */
function address(s: string, from: number, to: number, bytes: Buffer | undefined): string {
  const a = s.slice(from, to);
  for (let i = 0; i < a.length; i++) {
    if (a.charCodeAt(i) > 127) return (bytes ? bytes.toString('utf8', from, to) : a).toLowerCase();
  }
  return a.toLowerCase();
}

/** Whether `needle` occurs in s[from, end) (a bounded search: never past the line). */
function within(s: string, needle: string, from: number, end: number): boolean {
  const i = s.indexOf(needle, from);
  return i >= 0 && i + needle.length <= end;
}

/** What a scanned line hands over: one call per event, with its fields. */
export interface EventSink {
  client(qid: string, authenticated: boolean): void;
  pickup(qid: string): void;
  from(qid: string, at: number, sender: string, size: number): void;
  delivered(qid: string, at: number, recipient: string, local: boolean): void;
  removed(qid: string, at: number): void;
}

/** A sink that keeps the event as an object (parseLine, tests). */
export class EventBuilder implements EventSink {
  event: LogEvent | null = null;
  client(qid: string, authenticated: boolean): void {
    this.event = { kind: 'client', qid, authenticated };
  }
  pickup(qid: string): void {
    this.event = { kind: 'pickup', qid };
  }
  from(qid: string, at: number, sender: string, size: number): void {
    this.event = { kind: 'from', qid, at, sender, size };
  }
  delivered(qid: string, at: number, recipient: string, local: boolean): void {
    this.event = { kind: 'delivered', qid, at, recipient, local };
  }
  removed(qid: string, at: number): void {
    this.event = { kind: 'removed', qid, at };
  }
}

/** One line (a string, as it would be decoded from UTF-8) into its event, or null. */
export function parseLine(line: string, reference: Date): LogEvent | null {
  const bytes = Buffer.from(line, 'utf8');
  return new LineScanner(reference).line(bytes.toString('latin1'), 0, bytes.length, bytes);
}
