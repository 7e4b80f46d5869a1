import { RateLimiterMemory, RateLimiterRedis } from 'rate-limiter-flexible';
import type { RateLimiterAbstract } from 'rate-limiter-flexible';
import type { Redis } from 'ioredis';
import type { Limits, Window } from '../../shared/send-rate.js';
import { WINDOWS, WINDOW_SECONDS } from '../../shared/send-rate.js';

// Limits differ per account, so the counters take "any number" and the
// decision compares the count with the account's own limit.
const UNBOUNDED = Number.MAX_SAFE_INTEGER;

/** Messages per SASL user in each window, in Redis (shared) or in memory. */
export class SendCounter {
  private readonly limiters: Record<Window, RateLimiterAbstract>;

  constructor(redis?: Redis) {
    const make = (w: Window): RateLimiterAbstract => {
      const opts = { keyPrefix: `mailsvc:send:${w}`, points: UNBOUNDED, duration: WINDOW_SECONDS[w] };
      return redis ? new RateLimiterRedis({ ...opts, storeClient: redis, useRedisPackage: false }) : new RateLimiterMemory(opts);
    };
    this.limiters = Object.fromEntries(WINDOWS.map((w) => [w, make(w)])) as Record<Window, RateLimiterAbstract>;
  }

  /**
   * Counts one message. When a window is over its limit the message is not
   * counted in any window (it is deferred) and that window is returned.
   */
  async take(user: string, limits: Limits): Promise<Window | null> {
    const active = WINDOWS.filter((w) => limits[w] > 0);
    const counts = await Promise.all(active.map((w) => this.limiters[w].consume(user, 1)));
    const over = active.find((w, i) => (counts[i]?.consumedPoints ?? 0) > limits[w]);
    if (over === undefined) return null;
    await Promise.all(active.map((w) => this.limiters[w].reward(user, 1)));
    return over;
  }
}
