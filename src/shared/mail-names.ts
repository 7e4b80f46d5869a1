import { badRequest } from './errors.js';

const LABEL = /^(?!-)[a-z0-9-]{1,63}(?<!-)$/;
const LOCAL = /^[a-z0-9!#$%&'*+/=?^_`{|}~-]+(\.[a-z0-9!#$%&'*+/=?^_`{|}~-]+)*$/;

/** A domain name as Postfix and Dovecot see it: lowercase ASCII (IDNs in punycode). */
export function normalizeDomain(input: string): string {
  const name = input.trim().toLowerCase().replace(/\.$/, '');
  const labels = name.split('.');
  if (name.length > 253 || labels.length < 2 || !labels.every((l) => LABEL.test(l)) || /^\d+$/.test(labels.at(-1) ?? '')) {
    throw badRequest(`Invalid domain name "${input.slice(0, 100)}": use a name like example.org (IDNs in punycode, xn--…)`);
  }
  return name;
}

/** A mailbox address: dot-atom local part (lowercased), a valid domain. */
export function normalizeAddress(input: string): { address: string; localPart: string; domain: string } {
  const trimmed = input.trim().toLowerCase();
  const at = trimmed.lastIndexOf('@');
  const localPart = at > 0 ? trimmed.slice(0, at) : '';
  if (at <= 0 || localPart.length > 64 || !LOCAL.test(localPart)) {
    throw badRequest(`Invalid address "${input.slice(0, 100)}": use local-part@domain, e.g. alice@example.org`);
  }
  const domain = normalizeDomain(trimmed.slice(at + 1));
  return { address: `${localPart}@${domain}`, localPart, domain };
}

/** An alias source: an address, or `@domain` for a catch-all. */
export function normalizeAliasSource(input: string): { source: string; domain: string } {
  const trimmed = input.trim().toLowerCase();
  if (trimmed.startsWith('@')) {
    const domain = normalizeDomain(trimmed.slice(1));
    return { source: `@${domain}`, domain };
  }
  const { address, domain } = normalizeAddress(trimmed);
  return { source: address, domain };
}

/** True when the text holds a control character (C0 or DEL). */
export function hasControlChars(text: string): boolean {
  for (let i = 0; i < text.length; i += 1) {
    const c = text.charCodeAt(i);
    if (c < 0x20 || c === 0x7f) return true;
  }
  return false;
}
