/**
 * DKIM names and sizes both the service and the root helper check: a selector
 * is one lower-case DNS label (mailsvc's are `YYYYMM`, a letter, an `e` for
 * Ed25519), never a path or an option.
 */
const SELECTOR = /^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/;

export function parseDkimSelector(raw: string): string {
  if (!SELECTOR.test(raw)) throw new Error('selector must be one DNS label: lower-case letters, digits and "-" (e.g. 202611)');
  return raw;
}

export const DKIM_ALGORITHMS = ['rsa', 'ed25519'] as const;
export type DkimKeyAlgorithm = (typeof DKIM_ALGORITHMS)[number];

/** The longest list argument of the helper's dkim-signing-apply and srs-domains-apply (within its 64 KiB request line). */
export const HELPER_LIST_ARG_MAX = 60 * 1024;

/** RSA keys the helper installs: RFC 8301 wants at least 1024 bits, mailsvc at least 2048; 4096 is the largest that fits the helper's protocol. */
export const DKIM_RSA_MIN_BITS = 2048;
export const DKIM_RSA_MAX_BITS = 4096;
