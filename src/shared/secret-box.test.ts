import { describe, expect, it } from 'vitest';
import { randomBytes } from 'node:crypto';
import { SecretBox } from './secret-box.js';

describe('SecretBox (AES-256-GCM envelope with a key id)', () => {
  const k1 = randomBytes(32);
  const k2 = randomBytes(32);

  it('seals to v1.<key id>.<iv>.<tag>.<ciphertext> and opens again; the plaintext is not in the envelope', () => {
    const box = new SecretBox(k1);
    const sealed = box.seal('JBSWY3DPEHPK3PXP', 'admin_mfa.1.totp_secret');
    expect(sealed.split('.')).toHaveLength(5);
    expect(sealed.startsWith(`v1.${box.keyId}.`)).toBe(true);
    expect(sealed).not.toContain('JBSWY3DPEHPK3PXP');
    expect(box.open(sealed, 'admin_mfa.1.totp_secret')).toBe('JBSWY3DPEHPK3PXP');
    expect(box.seal('same', 'c')).not.toBe(box.seal('same', 'c'));
  });

  it('refuses a value moved to another place (context) or tampered with', () => {
    const box = new SecretBox(k1);
    const sealed = box.seal('secret', 'sms_providers.provider_a.api_key');
    expect(() => box.open(sealed, 'sms_providers.provider_b.api_key')).toThrow();
    const parts = sealed.split('.');
    parts[4] = Buffer.from('tampered').toString('base64url');
    expect(() => box.open(parts.join('.'), 'sms_providers.provider_a.api_key')).toThrow();
  });

  it('opens values of a previous key kept in the ring, and names a missing key', () => {
    const old = new SecretBox(k1);
    const sealed = old.seal('v', 'c');
    const rotated = new SecretBox(k2, [k1]);
    expect(rotated.open(sealed, 'c')).toBe('v');
    expect(rotated.sealedWith(rotated.seal('v', 'c'))).toBe(rotated.keyId);
    expect(() => new SecretBox(k2).open(sealed, 'c')).toThrow(/MAILSVC_SECRET_KEY_PREVIOUS/);
  });
});
