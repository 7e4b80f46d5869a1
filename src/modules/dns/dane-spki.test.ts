import { execFileSync } from 'node:child_process';
import { X509Certificate, createHash } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import { makeTestCa } from '../../../test/helpers/test-ca.js';
import { spkiHex, spkiSha256, spkiSha256OfDer } from './dane-spki.js';
import { tlsaMatches } from './deliverability/dane-checks.js';

/** The SPKI SHA-256 of a certificate and of its key agree with openssl's, and TLSA matching follows RFC 6698's fields. */
describe('DANE SPKI digests and TLSA matching', () => {
  const ca = makeTestCa(['mail.example.test']);
  afterAll(() => ca.cleanup());
  const der = (pem: string) => new X509Certificate(pem).raw;

  it('certificate, private key and DER give the digest openssl computes', () => {
    const spkiDer = execFileSync('openssl', ['pkey', '-pubout', '-outform', 'DER'], { input: ca.key });
    const expected = createHash('sha256').update(spkiDer).digest('hex');
    expect(spkiSha256(ca.cert)).toBe(expected);
    // A chain: the leaf (first) counts.
    expect(spkiSha256(ca.cert + ca.ca)).toBe(expected);
    expect(spkiSha256(ca.key)).toBe(expected);
    expect(spkiSha256OfDer(der(ca.cert))).toBe(expected);
    expect(spkiSha256(ca.ca)).not.toBe(expected);
  });

  it('refuses what is not PEM or not a digest', () => {
    expect(() => spkiSha256('hello')).toThrow(/not a PEM certificate or key/);
    expect(spkiHex('A'.repeat(64))).toBe('a'.repeat(64));
    expect(() => spkiHex('a'.repeat(63))).toThrow(/64 hex digits/);
  });

  it('matches usage 3 on the leaf only and usage 2 on the CA only, by selector and matching type', () => {
    const chain = [der(ca.cert), der(ca.ca)];
    const leafSpki = spkiSha256(ca.cert);
    expect(tlsaMatches({ usage: 3, selector: 1, matching: 1, data: leafSpki }, chain)).toBe(true);
    expect(tlsaMatches({ usage: 2, selector: 1, matching: 1, data: leafSpki }, chain)).toBe(false);
    expect(tlsaMatches({ usage: 3, selector: 0, matching: 0, data: chain[0]!.toString('hex') }, chain)).toBe(true);
    expect(tlsaMatches({ usage: 2, selector: 0, matching: 2, data: createHash('sha512').update(chain[1]!).digest('hex') }, chain)).toBe(true);
    expect(tlsaMatches({ usage: 3, selector: 0, matching: 2, data: createHash('sha512').update(chain[1]!).digest('hex') }, chain)).toBe(false);
    // PKIX usages are not used for SMTP (RFC 7672 §3.1.3).
    expect(tlsaMatches({ usage: 1, selector: 1, matching: 1, data: leafSpki }, chain)).toBe(false);
  });
});
