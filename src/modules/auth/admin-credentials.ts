import { constantTimeEqual } from '../../shared/crypto.js';
import { hashPassword, verifyPassword } from '../../shared/password-hash.js';

export { ARGON2_PARAMS, hashPassword } from '../../shared/password-hash.js';

/**
 * The one administrator's username and argon2id hash. A wrong username still
 * costs one verify, so timing does not tell which of the two was wrong.
 *
 * A plain development password (or none) is hashed on first use, not at
 * construction: a CLI command that never checks a password runs no argon2.
 */
export class AdminCredentials {
  private hash: Promise<string> | undefined;

  constructor(
    readonly username: string,
    private readonly passwordHash: string | undefined,
    private readonly plainPassword: string | undefined,
  ) {}

  private phc(): Promise<string> {
    // No password configured: a random one nobody knows, so every sign-in fails.
    this.hash ??= this.passwordHash
      ? Promise.resolve(this.passwordHash)
      : hashPassword(this.plainPassword ?? crypto.randomUUID() + crypto.randomUUID());
    return this.hash;
  }

  async check(username: string, password: string): Promise<boolean> {
    const userOk = constantTimeEqual(username, this.username);
    const passOk = await verifyPassword(await this.phc(), password);
    return userOk && passOk;
  }
}
