import { hash, verify, Algorithm } from '@node-rs/argon2';

/** OWASP's argon2id floor: 19 MiB, two passes, one lane. */
export const ARGON2_PARAMS = { algorithm: Algorithm.Argon2id, memoryCost: 19456, timeCost: 2, parallelism: 1 } as const;

export function hashPassword(password: string): Promise<string> {
  return hash(password, ARGON2_PARAMS);
}

/** False for a wrong password and for a malformed hash alike. */
export async function verifyPassword(phc: string, password: string): Promise<boolean> {
  try {
    return await verify(phc, password);
  } catch {
    return false;
  }
}
