import { createHmac, hash, randomBytes, timingSafeEqual } from 'node:crypto';

export function randomId(bytes = 16): string {
  return randomBytes(bytes).toString('base64url');
}

/** One-shot `crypto.hash`: no Hash object per call (this runs on every authenticated request). */
export function sha256(input: string | Buffer): Buffer {
  return hash('sha256', input, 'buffer');
}

export function hmacSha256(key: Buffer, input: string): Buffer {
  return createHmac('sha256', key).update(input).digest();
}

/** Compares two strings in time independent of where they differ: both are hashed first. */
export function constantTimeEqual(a: string | Buffer, b: string | Buffer): boolean {
  return timingSafeEqual(sha256(a), sha256(b));
}
