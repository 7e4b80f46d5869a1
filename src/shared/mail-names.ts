import { AppError, badRequest } from './errors.js';

const LABEL = /^(?!-)[a-z0-9-]{1,63}(?<!-)$/;
const LOCAL = /^[a-z0-9!#$%&'*+/=?^_`{|}~-]+(\.[a-z0-9!#$%&'*+/=?^_`{|}~-]+)*$/;

/** A domain name as Postfix and Dovecot see it: lowercase ASCII (IDNs in punycode). */
export function normalizeDomain(input: string): string {
  refuseControlChars('name', input);
  const name = input.trim().toLowerCase().replace(/\.$/, '');
  const labels = name.split('.');
  if (name.length > 253 || labels.length < 2 || !labels.every((l) => LABEL.test(l)) || /^\d+$/.test(labels.at(-1) ?? '')) {
    throw badRequest(`Invalid domain name "${input.slice(0, 100)}": use a name like example.org (IDNs in punycode, xn--…)`);
  }
  return name;
}

/** A mailbox address: dot-atom local part (lowercased), a valid domain. */
export function normalizeAddress(input: string): { address: string; localPart: string; domain: string } {
  refuseControlChars('address', input);
  const trimmed = input.trim().toLowerCase();
  const at = trimmed.lastIndexOf('@');
  const localPart = at > 0 ? trimmed.slice(0, at) : '';
  if (at <= 0 || localPart.length > 64 || !LOCAL.test(localPart)) {
    throw badRequest(`Invalid address "${input.slice(0, 100)}": use local-part@domain, e.g. alice@example.org`);
  }
  const domain = normalizeDomain(trimmed.slice(at + 1));
  return { address: `${localPart}@${domain}`, localPart, domain };
}

/**
 * What a sign-in's per-mailbox lockout counts under: the address exactly as
 * sign-in reads it (normalizeAddress: case, surrounding white space of either
 * part, NBSP, U+2003, U+FEFF, a trailing dot of the domain), so every spelling
 * that reaches one mailbox shares one counter. Text that is not an address
 * keys on itself, trimmed and lowercased: it reaches no mailbox.
 */
export function loginKey(input: string): string {
  try {
    return normalizeAddress(input).address;
  } catch {
    return input.trim().toLowerCase().slice(0, 320);
  }
}

/** An alias source: an address, or `@domain` for a catch-all. */
export function normalizeAliasSource(input: string): { source: string; domain: string } {
  refuseControlChars('source', input);
  const trimmed = input.trim().toLowerCase();
  if (trimmed.startsWith('@')) {
    const domain = normalizeDomain(trimmed.slice(1));
    return { source: `@${domain}`, domain };
  }
  const { address, domain } = normalizeAddress(trimmed);
  return { source: address, domain };
}

/**
 * A control character: C0, DEL, C1, the line and paragraph separators, or a
 * bidirectional override (which can make a name print as another).
 */
export function isControlChar(c: number): boolean {
  return c < 0x20 || (c >= 0x7f && c <= 0x9f) || c === 0x2028 || c === 0x2029 || (c >= 0x202a && c <= 0x202e) || (c >= 0x2066 && c <= 0x2069);
}

/** True when the text holds a control character (isControlChar). */
export function hasControlChars(text: string): boolean {
  for (let i = 0; i < text.length; i += 1) if (isControlChar(text.charCodeAt(i))) return true;
  return false;
}

/** Refuses a name field holding a control character (422 naming the field), before any trimming hides it. */
export function refuseControlChars(field: string, value: string | undefined | null): void {
  if (value === undefined || value === null || !hasControlChars(value)) return;
  const message = 'must not contain control characters';
  throw new AppError('validation', `Invalid ${field}: ${message}`, { errors: [{ path: `body.${field}`, message }] });
}
