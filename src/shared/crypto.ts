import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

export function randomId(bytes = 16): string {
  return randomBytes(bytes).toString('base64url');
}

export function sha256(input: string | Buffer): Buffer {
  return createHash('sha256').update(input).digest();
}

export function hmacSha256(key: Buffer, input: string): Buffer {
  return createHmac('sha256', key).update(input).digest();
}

/** Compares two strings in time independent of where they differ: both are hashed first. */
export function constantTimeEqual(a: string | Buffer, b: string | Buffer): boolean {
  return timingSafeEqual(sha256(a), sha256(b));
}
