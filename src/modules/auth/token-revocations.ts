import type { Redis } from 'ioredis';

/**
 * Revocations every API instance must see at once. With Redis they live there
 * and each request asks (one round trip); in-process (one instance) the token
 * cache itself is dropped, so nothing needs asking.
 */
export type TokenRevocations = {
  isRevoked(id: string, createdAt: number): Promise<boolean>;
  revoke(id: string, ttlMs: number): Promise<void>;
  revokeAllBefore(at: number): Promise<void>;
};

export class LocalRevocations implements TokenRevocations {
  private before = 0;
  isRevoked(_id: string, createdAt: number): Promise<boolean> {
    return Promise.resolve(createdAt <= this.before);
  }
  revoke(): Promise<void> {
    return Promise.resolve();
  }
  revokeAllBefore(at: number): Promise<void> {
    this.before = Math.max(this.before, at);
    return Promise.resolve();
  }
}

const ALL_BEFORE = 'mailsvc:tokens-revoked-before';

export class RedisRevocations implements TokenRevocations {
  constructor(private readonly redis: Redis, private readonly maxTtlMs: number) {}
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
