import { createPrivateKey, createPublicKey } from 'node:crypto';
import { dirname, join } from 'node:path';
import { DKIM_RSA_MAX_BITS, DKIM_RSA_MIN_BITS } from '../../shared/dkim-names.js';
import type { DkimKeyAlgorithm } from '../../shared/dkim-names.js';

/** Rspamd's DKIM key directory: `dkim/` beside `local.d/` (Debian: /etc/rspamd/dkim). */
export const dkimKeyDir = (rspamdLocalDir: string): string => join(dirname(rspamdLocalDir), 'dkim');

/** The key file of one selector, derived from validated names only: `<key dir>/<domain>.<selector>.key`. */
export const dkimKeyPath = (rspamdLocalDir: string, domain: string, selector: string): string => join(dkimKeyDir(rspamdLocalDir), `${domain}.${selector}.key`);

/** The fixed PKCS#8 prefix of an Ed25519 private key (RFC 8410); the 32-byte seed follows. */
const ED25519_PKCS8_PREFIX = Buffer.from('302e020100300506032b657004220420', 'hex');

/**
 * The PKCS#8 DER of a key in the form mailsvc keeps it: RSA as PKCS#8 PEM,
 * Ed25519 as Rspamd's base64 of seed ‖ public key (libsodium's 64-byte form).
 */
export function pkcs8Der(algorithm: DkimKeyAlgorithm, stored: string): Buffer {
  if (algorithm === 'ed25519') {
    const raw = Buffer.from(stored.trim(), 'base64');
    return Buffer.concat([ED25519_PKCS8_PREFIX, raw.subarray(0, 32)]);
  }
  return createPrivateKey({ key: stored, format: 'pem' }).export({ type: 'pkcs8', format: 'der' });
}

/**
 * The content of the key file Rspamd reads, made from a PKCS#8 DER key after
 * checking it is what it claims: RSA of 2048 to 4096 bits (PKCS#8 PEM) or
 * Ed25519 (base64 of seed ‖ public key). Anything else throws, with a reason
 * that never quotes the key.
 */
export function keyFileContent(algorithm: DkimKeyAlgorithm, der: Buffer): { content: string; bits: number } {
  let key;
  try {
    key = createPrivateKey({ key: der, format: 'der', type: 'pkcs8' });
  } catch {
    throw new Error('key is not a PKCS#8 DER private key');
  }
  if (key.asymmetricKeyType !== algorithm) throw new Error(`key is ${key.asymmetricKeyType ?? 'of an unknown type'}, not ${algorithm}`);
  if (algorithm === 'rsa') {
    const bits = key.asymmetricKeyDetails?.modulusLength ?? 0;
    if (bits < DKIM_RSA_MIN_BITS || bits > DKIM_RSA_MAX_BITS) throw new Error(`RSA key of ${bits} bits: mailsvc installs ${DKIM_RSA_MIN_BITS} to ${DKIM_RSA_MAX_BITS} bits`);
    return { content: key.export({ type: 'pkcs8', format: 'pem' }).toString(), bits };
  }
  const seed = key.export({ type: 'pkcs8', format: 'der' }).subarray(-32);
  // The SPKI DER of an Ed25519 key ends with the 32 raw bytes.
  const pub = createPublicKey(key).export({ type: 'spki', format: 'der' }).subarray(-32);
  return { content: `${Buffer.concat([seed, pub]).toString('base64')}\n`, bits: 256 };
}

/** The key files `dkim_signing.conf` (renderDkimSigning) names: what Rspamd signs with now. */
export function signingPaths(conf: string): Set<string> {
  const out = new Set<string>();
  for (const m of conf.matchAll(/path = "((?:[^"\\]|\\.)*)";/g)) out.add((m[1] ?? '').replace(/\\(.)/g, '$1'));
  return out;
}
