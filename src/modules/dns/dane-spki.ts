import { X509Certificate, createHash, createPublicKey } from 'node:crypto';
import { AppError } from '../../shared/errors.js';

/** A SHA-256 digest as DANE publishes it: 64 lowercase hex digits. */
export const SPKI_HEX = /^[0-9a-f]{64}$/;

/**
 * The SHA-256 of the SubjectPublicKeyInfo (DER) of a PEM certificate (the
 * first, the leaf, of a chain), public key or private key: the association
 * data of a `TLSA 3 1 1` record (RFC 6698 §2.1: usage 3 DANE-EE, selector 1
 * SPKI, matching type 1 SHA-256). A key renewed with the same key pair keeps it.
 */
export function spkiSha256(pem: string): string {
  let der: Buffer;
  try {
    der = /-----BEGIN CERTIFICATE-----/.test(pem)
      ? new X509Certificate(pem).publicKey.export({ type: 'spki', format: 'der' })
      : createPublicKey(pem).export({ type: 'spki', format: 'der' });
  } catch (err) {
    throw new AppError('bad_request', `not a PEM certificate or key: ${err instanceof Error ? err.message : String(err)}`);
  }
  return createHash('sha256').update(der).digest('hex');
}

/** The SPKI SHA-256 of a DER certificate (what a TLS peer sends). */
export const spkiSha256OfDer = (der: Buffer): string => createHash('sha256').update(new X509Certificate(der).publicKey.export({ type: 'spki', format: 'der' })).digest('hex');

/** Checks and normalizes a hex SPKI SHA-256 given by a caller (400 otherwise). */
export function spkiHex(value: string, what = 'SPKI SHA-256'): string {
  const v = value.trim().toLowerCase();
  if (!SPKI_HEX.test(v)) throw new AppError('bad_request', `${what}: expected 64 hex digits (the SHA-256 of the certificate's public key; mailsvc computes it from a PEM certificate)`);
  return v;
}
