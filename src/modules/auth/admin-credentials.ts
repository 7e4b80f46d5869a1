import { hash, verify, Algorithm } from '@node-rs/argon2';
import { constantTimeEqual } from '../../shared/crypto.js';

/** OWASP's argon2id floor: 19 MiB, two passes, one lane. */
export const ARGON2_PARAMS = { algorithm: Algorithm.Argon2id, memoryCost: 19456, timeCost: 2, parallelism: 1 } as const;

export function hashPassword(password: string): Promise<string> {
  return hash(password, ARGON2_PARAMS);
}

/**
 * The one administrator's username and argon2id hash. A wrong username still
 * costs one verify, so timing does not tell which of the two was wrong.
 */
export class AdminCredentials {
  private constructor(readonly username: string, private readonly passwordHash: string) {}

  static async create(username: string, passwordHash: string | undefined, plainPassword: string | undefined): Promise<AdminCredentials> {
    if (passwordHash) return new AdminCredentials(username, passwordHash);
    if (plainPassword) return new AdminCredentials(username, await hashPassword(plainPassword));
    // No password configured: a random one nobody knows, so every sign-in fails.
    return new AdminCredentials(username, await hashPassword(crypto.randomUUID() + crypto.randomUUID()));
  }

  async check(username: string, password: string): Promise<boolean> {
    const userOk = constantTimeEqual(username, this.username);
    let passOk = false;
    try {
      passOk = await verify(this.passwordHash, password);
    } catch {
      passOk = false;
    }
    return userOk && passOk;
  }
}
