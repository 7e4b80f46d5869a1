import { RateLimiterMemory, RateLimiterRedis, RateLimiterRes } from 'rate-limiter-flexible';
import type { RateLimiterAbstract } from 'rate-limiter-flexible';
import type { Redis } from 'ioredis';
import { AppError } from '../../shared/errors.js';

export type LockoutLimits = { failLimit: number; windowSeconds: number; blockSeconds: number };

/**
 * Authentication failures per client address (decisions.md §4), counted by
 * rate-limiter-flexible in memory or in Redis (shared by every instance).
 *
 * Only failures are counted, and the count is the store's atomic increment:
 * the failure that goes past the limit is itself answered 429 and starts the
 * block, so N parallel wrong attempts get at most `failLimit` answers other
 * than 429, while parallel correct attempts never block each other.
 */
export class Lockout {
  private readonly limiter: RateLimiterAbstract;

  constructor(readonly limits: LockoutLimits, redis?: Redis) {
    const opts = {
      keyPrefix: 'mailsvc:authfail',
      points: limits.failLimit,
      duration: limits.windowSeconds,
      blockDuration: limits.blockSeconds,
    };
    this.limiter = redis ? new RateLimiterRedis({ ...opts, storeClient: redis, useRedisPackage: false }) : new RateLimiterMemory(opts);
  }

  private tooMany(): AppError {
    return new AppError('rate_limited', 'Too many authentication attempts', { retryAfter: this.limits.blockSeconds });
  }

  private async count(ip: string): Promise<void> {
    try {
      await this.limiter.consume(ip, 1);
    } catch (err) {
      if (err instanceof RateLimiterRes) throw this.tooMany();
      throw err;
    }
  }

  /**
   * Throws 429 when the address is blocked. The attempt that finds the limit
   * of failures already counted is blocked too, and starts the block.
   */
  async assertOpen(ip: string): Promise<void> {
    const res = await this.limiter.get(ip);
    if (res === null) return;
    if (res.consumedPoints > this.limits.failLimit) throw this.tooMany();
    if (res.consumedPoints >= this.limits.failLimit) {
      await this.count(ip);
      throw this.tooMany();
    }
  }

  /** Counts one failure; throws 429 when it is past the limit (the block starts). */
  async registerFailure(ip: string): Promise<void> {
    await this.count(ip);
  }

  /** A sign-in succeeded: the failures of the address are forgotten. */
  async clear(ip: string): Promise<void> {
    await this.limiter.delete(ip);
  }
}
