import { hasControlChars, isControlChar, normalizeAddress } from './mail-names.js';

/**
 * A mailbox's self-service mail rules (forwarding, out-of-office reply), as
 * the portal stores them and as the privileged helper receives them. The
 * helper renders the Sieve script itself from these checked fields: no
 * caller ever hands it script text.
 */
export type SieveRules = {
  forward: { to: string; keepCopy: boolean } | null;
  vacation: { subject: string; body: string; start: string | null; end: string | null; days: number } | null;
};

/** The longest rules as JSON the helper takes (a 4000-character reply, escaped, fits). */
export const SIEVE_RULES_MAX = 16_384;
export const VACATION_BODY_MAX = 4000;
export const VACATION_SUBJECT_MAX = 200;
/** Pigeonhole's default :days range. */
export const VACATION_DAYS = { min: 1, max: 30 } as const;
const DATE = /^\d{4}-\d{2}-\d{2}$/;

/** Thrown for bad rules; the message never quotes the text. */
export class SieveRulesError extends Error {}

function validDate(field: string, v: unknown): string | null {
  if (v === null || v === undefined) return null;
  if (typeof v !== 'string' || !DATE.test(v) || Number.isNaN(Date.parse(`${v}T00:00:00Z`)) || new Date(`${v}T00:00:00Z`).toISOString().slice(0, 10) !== v) {
    throw new SieveRulesError(`${field} must be a date YYYY-MM-DD`);
  }
  return v;
}

/** Letters of a reply body: any text, line breaks and tabs allowed, no other control character. */
function bodyOk(text: string): boolean {
  for (let i = 0; i < text.length; i += 1) {
    const c = text.charCodeAt(i);
    if (c !== 10 && c !== 9 && c !== 13 && isControlChar(c)) return false;
  }
  return true;
}

/** Checks rules (from the API or the helper's argument) for the mailbox `owner`; throws SieveRulesError naming the field. */
/** A plain object with no key but these (an array, or an unknown key, is refused: the helper takes nothing it does not render). */
function only(what: string, v: unknown, keys: readonly string[]): Record<string, unknown> {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) throw new SieveRulesError(`${what} must be an object`);
  const extra = Object.keys(v).filter((k) => !keys.includes(k));
  if (extra.length > 0) throw new SieveRulesError(`${what} takes only ${keys.join(', ')}`);
  return v as Record<string, unknown>;
}

export function checkSieveRules(input: unknown, owner: string): SieveRules {
  const { forward, vacation } = only('rules', input, ['forward', 'vacation']);
  let fwd: SieveRules['forward'] = null;
  if (forward !== null && forward !== undefined) {
    const f = only('forward', forward, ['to', 'keepCopy']);
    if (typeof f.to !== 'string' || typeof f.keepCopy !== 'boolean') throw new SieveRulesError('forward needs to (an address) and keepCopy (true or false)');
    let to: string;
    try {
      to = normalizeAddress(f.to).address;
    } catch {
      throw new SieveRulesError('forward to must be an address such as bob@example.org');
    }
    if (to === owner) throw new SieveRulesError('forward to must be another address than the mailbox itself');
    fwd = { to, keepCopy: f.keepCopy };
  }
  let vac: SieveRules['vacation'] = null;
  if (vacation !== null && vacation !== undefined) {
    const v = only('vacation', vacation, ['subject', 'body', 'start', 'end', 'days']);
    if (typeof v.subject !== 'string' || v.subject.trim() === '' || v.subject.length > VACATION_SUBJECT_MAX || hasControlChars(v.subject)) {
      throw new SieveRulesError(`vacation subject must be 1 to ${VACATION_SUBJECT_MAX} characters on one line`);
    }
    if (typeof v.body !== 'string' || v.body.trim() === '' || v.body.length > VACATION_BODY_MAX || !bodyOk(v.body)) {
      throw new SieveRulesError(`vacation body must be 1 to ${VACATION_BODY_MAX} characters (line breaks allowed, no other control characters)`);
    }
    if (typeof v.days !== 'number' || !Number.isInteger(v.days) || v.days < VACATION_DAYS.min || v.days > VACATION_DAYS.max) {
      throw new SieveRulesError(`vacation days must be a whole number from ${VACATION_DAYS.min} to ${VACATION_DAYS.max}`);
    }
    const start = validDate('vacation start', v.start);
    const end = validDate('vacation end', v.end);
    if (start !== null && end !== null && end < start) throw new SieveRulesError('vacation end must not be before its start');
    vac = { subject: v.subject.trim(), body: v.body.replace(/\r\n?/g, '\n'), start, end, days: v.days };
  }
  return { forward: fwd, vacation: vac };
}

/** A Sieve quoted string (RFC 5228 §2.4.2): backslash and double quote escaped. */
const quote = (s: string): string => `"${s.replace(/[\\"]/g, (c) => `\\${c}`)}"`;

/**
 * The Sieve script of the rules, for Dovecot Pigeonhole. The reply comes first
 * (it must also answer mail that is forwarded without a copy); a forward
 * without a copy cancels the implicit keep.
 */
export function renderSieveScript(rules: SieveRules, owner: string): string {
  const req = new Set<string>();
  const lines: string[] = ['# Written by mailsvc from the mailbox owner\'s self-service settings; changes here are overwritten.'];
  if (rules.vacation) {
    const v = rules.vacation;
    req.add('vacation');
    const tests: string[] = [];
    if (v.start !== null) tests.push(`currentdate :value "ge" "date" ${quote(v.start)}`);
    if (v.end !== null) tests.push(`currentdate :value "le" "date" ${quote(v.end)}`);
    if (tests.length > 0) ['date', 'relational'].forEach((r) => req.add(r));
    const action = `vacation :days ${v.days} :subject ${quote(v.subject)} :addresses [${quote(owner)}] ${quote(v.body.replace(/\n/g, '\r\n'))};`;
    lines.push(tests.length > 0 ? `if allof (${tests.join(', ')}) {\n  ${action}\n}` : action);
  }
  if (rules.forward) {
    if (rules.forward.keepCopy) req.add('copy');
    lines.push(`redirect ${rules.forward.keepCopy ? ':copy ' : ''}${quote(rules.forward.to)};`);
  }
  if (!rules.vacation && !rules.forward) lines.push('keep;');
  const head = req.size > 0 ? [`require [${[...req].sort().map(quote).join(', ')}];`] : [];
  return [...head, ...lines, ''].join('\n');
}
