import type { Redis } from 'ioredis';

/**
 * Revocations every API instance must see at once, from its next request on.
 *
 * Without Redis a counter in the database (token_generation, raised in the
 * transaction of every revocation) is read on each request, before a token
 * kept in memory is trusted: when it moved, the token's row is read again and
 * says whether it was revoked. With Redis the revocations live there and each
 * request asks (one round trip).
 */
export type TokenRevocations = {
  /**
   * The counter as committed now (read before the row it vouches for), or
   * null when this store keeps none and `isRevoked` answers instead.
   */
  generation(): number | null | Promise<number | null>;
  /** The counter read without waiting, where the store can (SQLite); undefined where it cannot. */
  generationNow(): number | undefined;
  isRevoked(id: string, createdAt: number): Promise<boolean>;
  revoke(id: string, ttlMs: number): Promise<void>;
  revokeAllBefore(at: number): Promise<void>;
};

/** The database's counter; the revocation itself is the row (the repository raises the counter with it). */
export class DatabaseRevocations implements TokenRevocations {
  constructor(private readonly read: { generation(): number | Promise<number>; generationNow(): number | undefined }) {}
  generation(): number | Promise<number> {
    return this.read.generation();
  }
  generationNow(): number | undefined {
    return this.read.generationNow();
  }
  isRevoked(): Promise<boolean> {
    return Promise.resolve(false);
  }
  revoke(): Promise<void> {
    return Promise.resolve();
  }
  revokeAllBefore(): Promise<void> {
    return Promise.resolve();
  }
}

const ALL_BEFORE = 'mailsvc:tokens-revoked-before';

export class RedisRevocations implements TokenRevocations {
  constructor(private readonly redis: Redis, private readonly maxTtlMs: number) {}
  generation(): null {
    return null;
  }
  generationNow(): undefined {
    return undefined;
  }
  async isRevoked(id: string, createdAt: number): Promise<boolean> {
    const [one, before] = await this.redis.mget(`mailsvc:token-revoked:${id}`, ALL_BEFORE);
    return one !== null || (before !== null && createdAt <= Number(before));
  }
  async revoke(id: string, ttlMs: number): Promise<void> {
    await this.redis.set(`mailsvc:token-revoked:${id}`, '1', 'PX', Math.max(1, ttlMs));
  }
  async revokeAllBefore(at: number): Promise<void> {
    await this.redis.set(ALL_BEFORE, String(at), 'PX', this.maxTtlMs);
  }
}
