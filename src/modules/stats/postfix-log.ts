/**
 * Reads one Postfix log line into the few facts the statistics need. Both
 * timestamp shapes syslog writers use: classic `Nov 23 15:44:11` (no year,
 * local time, English month names whatever the locale) and RFC 3339
 * `2026-11-23T15:44:11.123456+00:00` (rsyslog on Debian, journald exports).
 * Anything else returns null: the collector skips what it does not need.
 */

const MONTHS: Record<string, number> = { Jan: 0, Feb: 1, Mar: 2, Apr: 3, May: 4, Jun: 5, Jul: 6, Aug: 7, Sep: 8, Oct: 9, Nov: 10, Dec: 11 };

/** The delivery agents that put mail into a local mailbox. */
const LOCAL_AGENTS = new Set(['lmtp', 'virtual', 'local']);
/** Agents that deliver (or drop) a recipient's copy; `status=sent` lines of these count. */
const DELIVERY_AGENTS = new Set(['lmtp', 'virtual', 'local', 'smtp', 'pipe', 'discard']);

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

const CLASSIC = /^([A-Z][a-z]{2}) {1,2}(\d{1,2}) (\d{2}):(\d{2}):(\d{2}) /;
const RFC3339 = /^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|[+-]\d{2}:\d{2})) /;
// `host program[/sub…]/service[pid]: QUEUEID: rest` — the syslog name may be anything (postfix, postfix/submission, postfix-out).
const BODY = /^\S+ (\S+?)\/([a-z]+)\[\d+\]: ([0-9A-Za-z]{6,}): (.*)$/;

// Busy logs write many lines per second: the last classic timestamp's value is kept (Date math is the costly part).
let lastText = '';
let lastRef = 0;
let lastAt = 0;

/** The line's time in epoch ms and the rest of the line, or null. */
function stamp(line: string, reference: Date): { at: number; rest: string } | null {
  const text = line.slice(0, 16);
  if (text === lastText && reference.getTime() === lastRef) return { at: lastAt, rest: line.slice(16) };
  const c = CLASSIC.exec(line);
  if (c) {
    const month = MONTHS[c[1] ?? ''];
    if (month === undefined) return null;
    const at = classicTime(month, Number(c[2]), Number(c[3]), Number(c[4]), Number(c[5]), reference);
    if (c[0].length === 16) [lastText, lastRef, lastAt] = [text, reference.getTime(), at];
    return { at, rest: line.slice(c[0].length) };
  }
  const r = RFC3339.exec(line);
  if (!r) return null;
  const at = Date.parse(r[1] ?? '');
  return Number.isNaN(at) ? null : { at, rest: line.slice(r[0].length) };
}

const angle = (text: string, key: string): string | null => {
  const i = text.indexOf(`${key}=<`);
  if (i < 0) return null;
  const end = text.indexOf('>', i + key.length + 2);
  return end < 0 ? null : text.slice(i + key.length + 2, end);
};

export function parseLine(line: string, reference: Date): LogEvent | null {
  // Cheap refusals first: most lines of a busy log are connects and disconnects.
  if (!line.includes(': ')) return null;
  const s = stamp(line, reference);
  if (!s) return null;
  const b = BODY.exec(s.rest);
  if (!b) return null;
  const service = b[2] ?? '';
  const qid = b[3] ?? '';
  const msg = b[4] ?? '';
  if (service === 'qmgr') {
    if (msg === 'removed') return { kind: 'removed', qid, at: s.at };
    if (!msg.startsWith('from=<')) return null;
    const sender = angle(msg, 'from') ?? '';
    const size = /, size=(\d+),/.exec(msg);
    return size ? { kind: 'from', qid, at: s.at, sender: sender.toLowerCase(), size: Number(size[1]) } : null;
  }
  if (service === 'smtpd' && msg.startsWith('client=')) return { kind: 'client', qid, authenticated: msg.includes(', sasl_username=') };
  if (service === 'pickup' && msg.startsWith('uid=')) return { kind: 'pickup', qid };
  if (DELIVERY_AGENTS.has(service) && msg.startsWith('to=<') && msg.includes(', status=sent ')) {
    return { kind: 'delivered', qid, at: s.at, recipient: (angle(msg, 'to') ?? '').toLowerCase(), local: LOCAL_AGENTS.has(service) };
  }
  return null;
}
