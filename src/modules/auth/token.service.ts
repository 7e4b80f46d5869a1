import { timingSafeEqual } from 'node:crypto';
import type { Static } from '@sinclair/typebox';
import type { AccessTokenResponse as AccessTokenSchema } from './schema.js';
import { randomId, sha256 } from '../../shared/crypto.js';
import type { Clock } from '../../shared/clock.js';
import type { TokenRepository, TokenRow } from './token.repository.js';
import type { TokenRevocations } from './token-revocations.js';

export type AccessTokenResponse = Static<typeof AccessTokenSchema>;

/** `issuedAt`: when the sign-in that earned the token ended (ms), for re-authentication. */
export type TokenPrincipal = { tokenId: string; subject: string; mfaVerified: boolean; issuedAt: number };

const DAY = 86_400_000;
const CACHE_MAX = 10_000;
/** A cached row is read again after this long, whatever happens. */
const CACHE_MAX_AGE_MS = 30_000;

/** The row as read, its stored digest decoded once, and the revocation counter read just before it (null: none kept). */
type Cached = { row: TokenRow; at: number; digest: Buffer; generation: number | null };

function split(token: string): { id: string; secret: string } | null {
  const dot = token.indexOf('.');
  if (dot <= 0 || dot === token.length - 1 || token.length > 200) return null;
  return { id: token.slice(0, dot), secret: token.slice(dot + 1) };
}

/**
 * Opaque access tokens `<id>.<secret>` (Lucia's scheme): only a SHA-256 of the
 * secret is stored, looked up by id and compared in constant time.
 *
 * Rows are cached in the process so an authenticated request does not read
 * its row. A revocation on any instance reaches the cache at once: without
 * Redis every revocation raises a counter in the database in its own
 * transaction, and a cached row is trusted only while the counter (read on
 * every request, before the row) has not moved; with Redis each request asks
 * Redis whether the token was revoked. Expiry is checked on every request.
 */
export class TokenService {
  private readonly cache = new Map<string, Cached>();

  constructor(
    private readonly repo: TokenRepository,
    private readonly clock: Clock,
    private readonly ttlSeconds: number,
    private readonly revocations: TokenRevocations,
  ) {}

  async issue(subject: string, mfaVerified: boolean): Promise<AccessTokenResponse> {
    const id = randomId(12);
    const secret = randomId(32);
    const now = this.clock.now();
    const row: TokenRow = {
      id,
      secret_hash: sha256(secret).toString('hex'),
      subject,
      purpose: 'admin',
      mfa_verified: mfaVerified ? 1 : 0,
      created_at: now,
      expires_at: now + this.ttlSeconds * 1000,
      revoked_at: null,
    };
    await this.repo.insert(row);
    if (Math.random() < 0.01) await this.repo.deleteExpired(now - DAY);
    return { access_token: `${id}.${secret}`, token_type: 'bearer', expires_in: this.ttlSeconds, mfa_verified: mfaVerified };
  }

  /** The row of `id`: from the cache while it is fresh and the counter unmoved, else read (and kept). */
  private async read(id: string, now: number, generation: number | null): Promise<Cached | undefined> {
    const row = await this.repo.findById(id);
    if (!row) return undefined;
    if (this.cache.size >= CACHE_MAX) this.cache.delete(this.cache.keys().next().value as string);
    const entry = { row, at: now, digest: Buffer.from(row.secret_hash, 'hex'), generation };
    this.cache.set(id, entry);
    return entry;
  }

  /** The cached row of `id` while it may be trusted: read under the same revocation counter, and not older than CACHE_MAX_AGE_MS. */
  private cached(id: string, generation: number | null, now: number): Cached | undefined {
    const hit = this.cache.get(id);
    return hit !== undefined && hit.generation === generation && now - hit.at < CACHE_MAX_AGE_MS ? hit : undefined;
  }

  /** The row's verdict on the secret at `now`: null when revoked, expired, not an admin token or not its secret. */
  private principalOf(entry: Cached, secret: string, now: number): TokenPrincipal | null {
    const row = entry.row;
    if (row.revoked_at !== null || row.expires_at <= now || row.purpose !== 'admin') return null;
    // Both sides are SHA-256 digests of equal length: one constant-time compare.
    const stored = entry.digest;
    const given = sha256(secret);
    if (stored.length !== given.length || !timingSafeEqual(given, stored)) return null;
    return { tokenId: row.id, subject: row.subject, mfaVerified: row.mfa_verified === 1, issuedAt: Number(row.created_at) };
  }

  async validate(token: string): Promise<TokenPrincipal | null> {
    const parts = split(token);
    if (!parts) return null;
    // Read before the row: a revocation committed after this read moves the counter, and the next request reads the row again.
    const g = this.revocations.generation();
    const generation = typeof g === 'number' || g === null ? g : await g;
    const now = this.clock.now();
    const entry = this.cached(parts.id, generation, now) ?? (await this.read(parts.id, now, generation));
    if (!entry) return null;
    const principal = this.principalOf(entry, parts.secret, now);
    if (principal && generation === null && (await this.revocations.isRevoked(principal.tokenId, entry.row.created_at))) return null;
    return principal;
  }

  /**
   * `validate` without waiting, for a token this process holds and a
   * revocation counter it can read at once (SQLite): the same checks, the
   * same answer. undefined when only `validate` can tell (the row must be
   * read, or Redis or the database server asked).
   */
  validateNow(token: string): TokenPrincipal | null | undefined {
    const parts = split(token);
    if (!parts) return null;
    const generation = this.revocations.generationNow();
    if (generation === undefined) return undefined;
    const now = this.clock.now();
    const hit = this.cached(parts.id, generation, now);
    return hit === undefined ? undefined : this.principalOf(hit, parts.secret, now);
  }

  /** Revokes the token when it is genuine; an unknown token is a no-op. */
  async revoke(token: string): Promise<void> {
    const principal = await this.validate(token);
    if (!principal) return;
    const now = this.clock.now();
    const row = this.cache.get(principal.tokenId)?.row;
    this.cache.delete(principal.tokenId);
    await this.repo.revoke(principal.tokenId, now);
    await this.revocations.revoke(principal.tokenId, (row?.expires_at ?? now + this.ttlSeconds * 1000) - now);
  }

  /** Whether any token is live, in the database. */
  async anyLive(): Promise<boolean> {
    return (await this.repo.countLive(this.clock.now())) > 0;
  }

  async revokeAll(): Promise<number> {
    const now = this.clock.now();
    this.cache.clear();
    const n = await this.repo.revokeAll(now);
    await this.revocations.revokeAllBefore(now);
    return n;
  }

  /**
   * A second factor was just enrolled: the tokens issued by password alone are
   * revoked everywhere (row, this cache, and Redis for the other instances).
   */
  async revokeUnverified(): Promise<number> {
    const now = this.clock.now();
    const rows = await this.repo.revokeUnverified(now);
    for (const row of rows) {
      this.cache.delete(row.id);
      await this.revocations.revoke(row.id, row.expires_at - now);
    }
    return rows.length;
  }

  /** Another process changed tokens: read them from the database again. */
  dropCache(): void {
    this.cache.clear();
  }
}
