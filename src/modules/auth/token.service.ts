import { randomId, sha256, constantTimeEqual } from '../../shared/crypto.js';
import type { Clock } from '../../shared/clock.js';
import type { TokenRepository } from './token.repository.js';

export type AccessTokenResponse = {
  access_token: string;
  token_type: 'bearer';
  expires_in: number;
  mfa_verified: boolean;
};

export type TokenPrincipal = { tokenId: string; subject: string; mfaVerified: boolean };

const DAY = 86_400_000;

function split(token: string): { id: string; secret: string } | null {
  const dot = token.indexOf('.');
  if (dot <= 0 || dot === token.length - 1 || token.length > 200) return null;
  return { id: token.slice(0, dot), secret: token.slice(dot + 1) };
}

/**
 * Opaque access tokens `<id>.<secret>` (Lucia's scheme): only a SHA-256 of the
 * secret is stored, looked up by id and compared in constant time. Tokens live
 * in the shared database, so a revocation is seen at once by every instance.
 */
export class TokenService {
  constructor(
    private readonly repo: TokenRepository,
    private readonly clock: Clock,
    private readonly ttlSeconds: number,
  ) {}

  async issue(subject: string, mfaVerified: boolean): Promise<AccessTokenResponse> {
    const id = randomId(12);
    const secret = randomId(32);
    const now = this.clock.now();
    await this.repo.insert({
      id,
      secret_hash: sha256(secret).toString('hex'),
      subject,
      purpose: 'admin',
      mfa_verified: mfaVerified ? 1 : 0,
      created_at: now,
      expires_at: now + this.ttlSeconds * 1000,
      revoked_at: null,
    });
    if (Math.random() < 0.01) await this.repo.deleteExpired(now - DAY);
    return { access_token: `${id}.${secret}`, token_type: 'bearer', expires_in: this.ttlSeconds, mfa_verified: mfaVerified };
  }

  async validate(token: string): Promise<TokenPrincipal | null> {
    const parts = split(token);
    if (!parts) return null;
    const row = await this.repo.findById(parts.id);
    if (!row || row.revoked_at !== null || row.expires_at <= this.clock.now() || row.purpose !== 'admin') return null;
    if (!constantTimeEqual(sha256(parts.secret).toString('hex'), row.secret_hash)) return null;
    return { tokenId: row.id, subject: row.subject, mfaVerified: row.mfa_verified === 1 };
  }

  /** Revokes the token when it is genuine; an unknown token is a no-op. */
  async revoke(token: string): Promise<void> {
    const principal = await this.validate(token);
    if (principal) await this.repo.revoke(principal.tokenId, this.clock.now());
  }

  async revokeAll(): Promise<number> {
    return this.repo.revokeAll(this.clock.now());
  }
}
