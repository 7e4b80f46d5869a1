import { Secret, TOTP } from 'otpauth';

/** RFC 6238, SHA-1, 6 digits, 30 s steps (docs/contract.md). */
const PERIOD = 30;

export function newTotpSecret(): string {
  return new Secret({ size: 20 }).base32;
}

function totp(secret: string, label: string, issuer: string): TOTP {
  return new TOTP({ issuer, label, algorithm: 'SHA1', digits: 6, period: PERIOD, secret: Secret.fromBase32(secret) });
}

export function provisioningUri(secret: string, username: string, issuer: string): string {
  return totp(secret, username, issuer).toString();
}

/**
 * The time step a code belongs to, allowing one step of drift either way, or
 * null when the code is not valid now. The caller refuses a step already used.
 */
export function matchTotpStep(secret: string, code: string, nowMs: number): number | null {
  if (!/^\d{6}$/.test(code)) return null;
  const delta = totp(secret, 'x', 'x').validate({ token: code, timestamp: nowMs, window: 1 });
  if (delta === null) return null;
  return Math.floor(nowMs / 1000 / PERIOD) + delta;
}
