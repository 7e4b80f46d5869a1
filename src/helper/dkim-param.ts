import { createPrivateKey } from 'node:crypto';
import { DKIM_ALGORITHMS, HELPER_LIST_ARG_MAX, DKIM_RSA_MAX_BITS, DKIM_RSA_MIN_BITS, parseDkimSelector } from '../shared/dkim-names.js';
import { normalizeDomain } from '../shared/mail-names.js';
import { isRecord, parseJsonOr } from '../shared/json-value.js';
import type { Param } from './action-types.js';

/** The longest signing set or SRS domain list (well within the 64 KiB request line). */
export const LONG_ARG = HELPER_LIST_ARG_MAX;

const message = (err: unknown): string => (err instanceof Error ? err.message : String(err));

/** A domain name exactly as mailsvc stores it (lower case, no trailing dot): never a path. */
export function strictDomain(raw: string): string {
  let name: string;
  try {
    name = normalizeDomain(raw);
  } catch (err) {
    throw new Error(message(err));
  }
  if (name !== raw) throw new Error(`domain must be written as ${name}`);
  return name;
}

export const dkimDomain: Param = { name: 'domain', validate: strictDomain };
export const dkimSelector: Param = { name: 'selector', validate: parseDkimSelector };
export const dkimAlgorithm: Param = {
  name: 'alg',
  validate(raw) {
    if (!(DKIM_ALGORITHMS as readonly string[]).includes(raw)) throw new Error(`alg must be one of ${DKIM_ALGORITHMS.join(', ')}`);
    return raw;
  },
};

/**
 * A DKIM private key as base64 of its PKCS#8 DER: RSA of 2048 to 4096 bits or
 * Ed25519, parsed by node:crypto. Secret (never logged); its messages never
 * quote it. An RSA-4096 key is about 3.2 KB of base64: it fits one argument.
 */
export const dkimPrivateKey: Param = {
  name: 'pkcs8-der-base64',
  secret: true,
  safeMessage: true,
  validate(raw) {
    if (!/^[A-Za-z0-9+/]+={0,2}$/.test(raw) || raw.length % 4 !== 0) throw new Error('key must be base64 of a PKCS#8 DER private key');
    let type: string | undefined;
    let bits = 0;
    try {
      const key = createPrivateKey({ key: Buffer.from(raw, 'base64'), format: 'der', type: 'pkcs8' });
      type = key.asymmetricKeyType;
      bits = key.asymmetricKeyDetails?.modulusLength ?? 0;
    } catch {
      throw new Error('key is not a PKCS#8 DER private key');
    }
    if (type === 'rsa') {
      if (bits < DKIM_RSA_MIN_BITS || bits > DKIM_RSA_MAX_BITS) throw new Error(`RSA key of ${bits} bits: mailsvc installs ${DKIM_RSA_MIN_BITS} to ${DKIM_RSA_MAX_BITS} bits`);
    } else if (type !== 'ed25519') {
      throw new Error(`key is ${type ?? 'of an unknown type'}: only RSA and Ed25519 keys sign DKIM`);
    }
    return raw;
  },
};

/** What Rspamd signs with: per domain, its selectors (names only; the helper derives the key files). */
export type SigningSet = { domain: string; selectors: { selector: string }[] }[];

/** `[{"domain":"example.org","selectors":[{"selector":"202611"}]}]`: every name checked, nothing else accepted. */
export const signingSet: Param = {
  name: 'signing',
  validate(raw) {
    const shape = 'signing must be a JSON array of {domain, selectors: [{selector}]}';
    const parsed = parseJsonOr(raw, shape);
    if (!Array.isArray(parsed)) throw new Error(shape);
    const out: SigningSet = [];
    const seen = new Set<string>();
    for (const d of parsed) {
      if (!isRecord(d) || typeof d.domain !== 'string' || !Array.isArray(d.selectors) || Object.keys(d).some((k) => k !== 'domain' && k !== 'selectors')) {
        throw new Error('each entry must be {domain, selectors: [{selector}]}');
      }
      const domain = strictDomain(d.domain);
      if (seen.has(domain)) throw new Error(`${domain} is listed twice`);
      seen.add(domain);
      const selectors: { selector: string }[] = [];
      for (const s of d.selectors) {
        if (!isRecord(s) || typeof s.selector !== 'string' || Object.keys(s).length !== 1) throw new Error(`each selector of ${domain} must be {selector}`);
        const selector = parseDkimSelector(s.selector);
        if (selectors.some((x) => x.selector === selector)) throw new Error(`selector ${selector} of ${domain} is listed twice`);
        selectors.push({ selector });
      }
      if (selectors.length === 0) throw new Error(`${domain} has no selector`);
      out.push({ domain, selectors });
    }
    return JSON.stringify(out);
  },
};

/** postsrsd's excluded domains: empty, or domain names separated by commas (sorted, each once). */
export const srsDomains: Param = {
  name: 'domains',
  validate(raw) {
    if (raw === '') return '';
    return [...new Set(raw.split(',').map(strictDomain))].sort().join(',');
  },
};
