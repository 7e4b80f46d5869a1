import { verify } from '@node-rs/argon2';
import { hashPassword } from '../../shared/password-hash.js';
import { badRequest } from '../../shared/errors.js';
import { hasControlChars } from '../../shared/mail-names.js';

/** Dovecot's scheme prefix: its SQL passdb verifies these hashes itself (libsodium). */
const SCHEME = '{ARGON2ID}';
export const MIN_MAIL_PASSWORD = 10;

export function checkMailPasswordStrength(password: string): void {
  if (password.length < MIN_MAIL_PASSWORD) throw badRequest(`Password too short: use at least ${MIN_MAIL_PASSWORD} characters`);
  if (password.length > 1024) throw badRequest('Password too long: at most 1024 characters');
  if (hasControlChars(password)) throw badRequest('Password must not contain control characters');
}

export async function hashMailPassword(password: string): Promise<string> {
  checkMailPasswordStrength(password);
  return SCHEME + (await hashPassword(password));
}

export async function verifyMailPassword(stored: string, password: string): Promise<boolean> {
  if (!stored.startsWith(SCHEME)) return false;
  try {
    return await verify(stored.slice(SCHEME.length), password);
  } catch {
    return false;
  }
}
