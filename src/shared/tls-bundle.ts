import { X509Certificate, createHash, createPrivateKey } from 'node:crypto';
import type { KeyObject } from 'node:crypto';

/**
 * A certificate chain and its private key as they travel to the root helper
 * (`tls-deploy`): DER, base64, never PEM text or a path. Both the service
 * (to answer a clear 422 first) and the helper (which trusts nothing it is
 * sent) check them with `parseTlsBundle`.
 */
export type TlsBundleWire = { chain: string[]; key: string };

/** A chain is the leaf and at most this many intermediates after it. */
export const TLS_CHAIN_MAX = 5;
/** Each DER certificate at most 16 KiB; the key at most 16 KiB. */
export const TLS_DER_MAX = 16 * 1024;
/** The bundle as it travels (JSON of base64): well within the helper's 64 KiB request line. */
export const TLS_BUNDLE_ARG_MAX = 56 * 1024;
export const TLS_RSA_MIN_BITS = 2048;
export const TLS_RSA_MAX_BITS = 8192;
const EC_CURVES = ['prime256v1', 'secp384r1'];

/** A certificate name: one label or a host name (lower case), the name of its directory under MAILSVC_TLS_DIR. */
export function parseCertName(raw: string): string {
  if (!/^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)*$/.test(raw) || raw.length > 200) {
    throw new Error('certificate name must be a lower-case host name or label (letters, digits, "-", ".")');
  }
  return raw;
}

export type TlsBundle = {
  chain: X509Certificate[];
  key: KeyObject;
  /** SHA-256 of the leaf's DER, lower-case hex. */
  sha256: string;
  notAfter: number;
};

const BASE64 = /^[A-Za-z0-9+/]+={0,2}$/;

function der(raw: unknown, what: string): Buffer {
  if (typeof raw !== 'string' || !BASE64.test(raw) || raw.length % 4 !== 0) throw new Error(`${what} must be base64 of DER`);
  const buf = Buffer.from(raw, 'base64');
  if (buf.length > TLS_DER_MAX) throw new Error(`${what} is over ${TLS_DER_MAX / 1024} KiB`);
  return buf;
}

/**
 * Parses and checks a chain and key: 1 to TLS_CHAIN_MAX certificates, each
 * issued (and signed) by the next; the leaf valid at `now`; the key RSA of
 * 2048 to 8192 bits or EC P-256/P-384, and the leaf's own. Messages never
 * quote the key.
 */
export function parseTlsBundle(wire: unknown, now: number): TlsBundle {
  if (typeof wire !== 'object' || wire === null || Array.isArray(wire)) throw new Error('bundle must be {chain: [base64 DER …], key: base64 PKCS#8 DER}');
  const w = wire as Record<string, unknown>;
  if (Object.keys(w).some((k) => k !== 'chain' && k !== 'key') || !Array.isArray(w.chain)) throw new Error('bundle must be {chain: [base64 DER …], key: base64 PKCS#8 DER}');
  if (w.chain.length < 1 || w.chain.length > TLS_CHAIN_MAX) throw new Error(`the chain must hold 1 to ${TLS_CHAIN_MAX} certificates (the leaf first)`);
  const chain = w.chain.map((c: unknown, i) => {
    const buf = der(c, `certificate ${i + 1}`);
    try {
      return new X509Certificate(buf);
    } catch {
      throw new Error(`certificate ${i + 1} of the chain is not an X.509 certificate`);
    }
  });
  for (let i = 0; i + 1 < chain.length; i++) {
    const [cert, issuer] = [chain[i] as X509Certificate, chain[i + 1] as X509Certificate];
    if (!cert.checkIssued(issuer) || !cert.verify(issuer.publicKey)) throw new Error(`certificate ${i + 1} of the chain is not issued by certificate ${i + 2}: give the leaf first, then each issuer`);
  }
  let key: KeyObject;
  try {
    key = createPrivateKey({ key: der(w.key, 'the key'), format: 'der', type: 'pkcs8' });
  } catch (err) {
    throw new Error(err instanceof Error && err.message.startsWith('the key') ? err.message : 'the key is not a PKCS#8 DER private key');
  }
  const type = key.asymmetricKeyType;
  const details = key.asymmetricKeyDetails ?? {};
  if (type === 'rsa') {
    const bits = details.modulusLength ?? 0;
    if (bits < TLS_RSA_MIN_BITS || bits > TLS_RSA_MAX_BITS) throw new Error(`an RSA key of ${bits} bits: ${TLS_RSA_MIN_BITS} to ${TLS_RSA_MAX_BITS} are accepted`);
  } else if (type === 'ec') {
    if (!EC_CURVES.includes(details.namedCurve ?? '')) throw new Error(`an EC key on ${details.namedCurve ?? 'an unknown curve'}: P-256 and P-384 are accepted`);
  } else {
    throw new Error(`a key of type ${type ?? 'unknown'}: RSA and EC (P-256, P-384) keys are accepted`);
  }
  const leaf = chain[0] as X509Certificate;
  if (!leaf.checkPrivateKey(key)) throw new Error("the key does not belong to the leaf certificate (the chain's first)");
  const notBefore = Date.parse(leaf.validFrom);
  const notAfter = Date.parse(leaf.validTo);
  if (!(notBefore <= now)) throw new Error(`the leaf certificate is not valid before ${new Date(notBefore).toISOString()}`);
  if (!(now < notAfter)) throw new Error(`the leaf certificate expired on ${new Date(notAfter).toISOString()}`);
  return { chain, key, sha256: createHash('sha256').update(leaf.raw).digest('hex'), notAfter };
}

/** PEM text of DER: 64 characters a line. */
export function pem(label: string, derBytes: Buffer): string {
  const b64 = derBytes.toString('base64').replace(/.{64}/g, '$&\n').replace(/\n$/, '');
  return `-----BEGIN ${label}-----\n${b64}\n-----END ${label}-----\n`;
}

/**
 * PEM text (a chain: the leaf first; a key in any form node:crypto reads) to
 * the wire form. Errors say what is wrong, never quote the key.
 */
export function bundleFromPem(chainPem: string, keyPem: string): TlsBundleWire {
  const blocks = [...chainPem.matchAll(/-----BEGIN CERTIFICATE-----\s*([A-Za-z0-9+/=\s]+?)\s*-----END CERTIFICATE-----/g)].map((m) => (m[1] ?? '').replace(/\s+/g, ''));
  if (blocks.length === 0) throw new Error('the chain holds no PEM certificate (-----BEGIN CERTIFICATE-----)');
  let key: KeyObject;
  try {
    key = createPrivateKey({ key: keyPem, format: 'pem' });
  } catch {
    throw new Error('the key is not a PEM private key (unencrypted PKCS#8, PKCS#1 or SEC1)');
  }
  return { chain: blocks, key: key.export({ type: 'pkcs8', format: 'der' }).toString('base64') };
}
