import { generateKeyPair } from 'node:crypto';
import { promisify } from 'node:util';

const generate = promisify(generateKeyPair);

export type DkimAlgorithm = 'rsa' | 'ed25519';

/** A fresh key: the private key in the form Rspamd reads, the public key as the record's `p=`. */
export type GeneratedKey = { algorithm: DkimAlgorithm; bits: number; privateKey: string; publicKey: string };

/**
 * RSA: the private key as PKCS#8 PEM, `p=` the base64 of the SubjectPublicKeyInfo
 * (RFC 6376 §3.6.1). Ed25519 (RFC 8463): `p=` the raw 32-byte public key; Rspamd
 * reads the private key as base64 of seed ‖ public key (libsodium's 64-byte form,
 * what `rspamadm dkim_keygen -t ed25519` writes).
 */
export async function generateDkimKey(algorithm: DkimAlgorithm, bits: number): Promise<GeneratedKey> {
  if (algorithm === 'rsa') {
    const { publicKey, privateKey } = await generate('rsa', { modulusLength: bits, publicExponent: 0x10001 });
    return {
      algorithm,
      bits,
      privateKey: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
      publicKey: publicKey.export({ type: 'spki', format: 'der' }).toString('base64'),
    };
  }
  const { publicKey, privateKey } = await generate('ed25519');
  // The DER forms end with the 32 raw bytes (fixed-length prefixes for Ed25519).
  const seed = privateKey.export({ type: 'pkcs8', format: 'der' }).subarray(-32);
  const raw = publicKey.export({ type: 'spki', format: 'der' }).subarray(-32);
  return { algorithm, bits: 256, privateKey: Buffer.concat([seed, raw]).toString('base64'), publicKey: raw.toString('base64') };
}

/** The TXT value published at `<selector>._domainkey.<domain>`. */
export function dkimRecordValue(algorithm: DkimAlgorithm, publicKey: string): string {
  return `v=DKIM1; k=${algorithm}; p=${publicKey}`;
}

/**
 * A dated selector, `YYYYMM` (UTC), with a letter added when that name is taken
 * (a second key in the same month: a rotation, a re-generation). Ed25519 keys
 * take the RSA selector with `e` appended, so the pair is easy to tell apart.
 */
export function nextSelector(now: number, taken: ReadonlySet<string>): string {
  const d = new Date(now);
  const base = `${d.getUTCFullYear()}${String(d.getUTCMonth() + 1).padStart(2, '0')}`;
  if (!taken.has(base) && !taken.has(`${base}e`)) return base;
  for (const letter of 'bcdfghijklmnopqrstuvwxyz') {
    const s = `${base}${letter}`;
    if (!taken.has(s) && !taken.has(`${s}e`)) return s;
  }
  return `${base}${d.getUTCDate()}${d.getUTCHours()}${d.getUTCMinutes()}${d.getUTCSeconds()}`;
}
