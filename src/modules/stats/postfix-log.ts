/**
 * Reads Postfix log lines into the few facts the statistics need. Both
 * timestamp shapes syslog writers use: classic `Nov 23 15:44:11` (no year,
 * local time, English month names whatever the locale) and RFC 3339
 * `2026-11-23T15:44:11.123456+00:00` (rsyslog on Debian, journald exports).
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
    // The timestamp's end: classic stamps are `Mmm dd hh:mm:ss` (15 characters), RFC 3339 ones end at the first space.
    let p: number;
    const c0 = s.charCodeAt(start);
    if (isDigit(c0)) {
      p = s.indexOf(' ', start);
      if (p < 0 || p >= end) return null;
    } else {
      // `Nov 23 15:44:11`, `Nov  3 15:44:11`, or (some writers) `Nov 3 15:44:11`.
      p = start + 15;
      if (s.charCodeAt(p) !== SP) {
        p = start + 14;
        if (s.charCodeAt(p) !== SP) return null;
      }
    }
    // `host tag[pid]: `: the tag ends at the second space after the timestamp.
    const hostEnd = s.indexOf(' ', p + 1);
    if (hostEnd < 0 || hostEnd >= end) return null;
    const tagEnd = s.indexOf(' ', hostEnd + 1);
    if (tagEnd < 0 || tagEnd >= end) return null;
    if (s.charCodeAt(tagEnd - 1) !== COLON || s.charCodeAt(tagEnd - 2) !== BRACKET_CLOSE) return null;
    // `[pid]` backwards from `]`, then the last `/` of the tag before it: both searches stay inside the tag.
    let open = tagEnd - 3;
    while (open > hostEnd && isDigit(s.charCodeAt(open))) open--;
    if (open === tagEnd - 3 || s.charCodeAt(open) !== BRACKET_OPEN) return null;
    let slash = open - 1;
    while (slash > hostEnd + 1 && s.charCodeAt(slash) !== SLASH) slash--;
    if (slash <= hostEnd + 1) return null;
    const service = serviceAt(s, slash + 1, open);
    if (service === Service.None) return null;
    // `QUEUEID: `: six or more letters and digits.
    const q = tagEnd + 1;
    let qe = q;
    while (qe < end && isAlnum(s.charCodeAt(qe))) qe++;
    if (qe - q < 6 || s.charCodeAt(qe) !== COLON || s.charCodeAt(qe + 1) !== SP) return null;
    const m = qe + 2;
    switch (service) {
      case Service.Qmgr: {
        if (end - m === 7 && s.startsWith('removed', m)) {
          const at = this.time(s, start, p);
          return at === null ? null : { kind: 'removed', qid: s.slice(q, qe), at };
        }
        if (!s.startsWith('from=<', m)) return null;
        const msg = s.slice(m, end);
        const gt = msg.indexOf('>', 6);
        if (gt < 0) return null;
        const sz = msg.indexOf(', size=', gt);
        if (sz < 0) return null;
        let size = 0;
        let i = sz + 7;
        for (; i < msg.length && isDigit(msg.charCodeAt(i)); i++) size = size * 10 + msg.charCodeAt(i) - ZERO;
        if (i === sz + 7 || msg.charCodeAt(i) !== COMMA) return null;
        const at = this.time(s, start, p);
        if (at === null) return null;
        return { kind: 'from', qid: s.slice(q, qe), at, sender: address(s, m + 6, m + gt, bytes), size };
      }
      case Service.Smtpd:
        if (!s.startsWith('client=', m)) return null;
        return { kind: 'client', qid: s.slice(q, qe), authenticated: s.slice(m, end).includes(', sasl_username=') };
      case Service.Pickup:
        return s.startsWith('uid=', m) ? { kind: 'pickup', qid: s.slice(q, qe) } : null;
      default: {
        if (!s.startsWith('to=<', m)) return null;
        const msg = s.slice(m, end);
        if (!msg.includes(', status=sent ')) return null;
        const gt = msg.indexOf('>', 4);
        if (gt < 0) return null;
        const at = this.time(s, start, p);
        if (at === null) return null;
        return { kind: 'delivered', qid: s.slice(q, qe), at, recipient: address(s, m + 4, m + gt, bytes), local: service === Service.LocalAgent };
      }
    }
  }

  /** The timestamp s[start, end) in epoch ms, or null when it is neither shape. */
  private time(s: string, start: number, end: number): number | null {
    const len = end - start;
    if (len === this.lastStamp.length && s.startsWith(this.lastStamp, start)) return this.lastAt;
    const at = isDigit(s.charCodeAt(start)) ? rfc3339(s, start, end) : classic(s, start, end, this.reference);
    if (at === null) return null;
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

const RFC3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|[+-]\d{2}:\d{2})$/;

function rfc3339(s: string, start: number, end: number): number | null {
  const text = s.slice(start, end);
  if (!RFC3339.test(text)) return null;
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

/** One line (a string, as it would be decoded from UTF-8) into its event, or null. */
export function parseLine(line: string, reference: Date): LogEvent | null {
  const bytes = Buffer.from(line, 'utf8');
  return new LineScanner(reference).line(bytes.toString('latin1'), 0, bytes.length, bytes);
}
