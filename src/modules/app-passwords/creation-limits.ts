import { RateLimiterMemory, RateLimiterRedis } from 'rate-limiter-flexible';
import type { RateLimiterAbstract } from 'rate-limiter-flexible';
import type { Redis } from 'ioredis';
import { AppError } from '../../shared/errors.js';

/** The limits in force (settings MAILSVC_APP_PASSWORDS_PER_MAILBOX and MAILSVC_APP_PASSWORD_CREATIONS_PER_HOUR), read on every creation. */
export type AppPasswordLimits = { perMailbox: number; perHour: number };

const HOUR = 3600;
/** Above any limit a creation may be set to: the store counts, the live limit decides (so a changed limit holds at once). */
const CEILING = 1_000_000;

/**
 * Creations per mailbox per hour, in Redis when several instances share it
 * (keys mailsvc:apppw-create:<account id>): a stolen portal session, or a
 * script gone wrong, cannot make app passwords by the hundred.
 */
export class AppPasswordCreations {
  private readonly counter: RateLimiterAbstract;

  constructor(redis?: Redis) {
    const opts = { keyPrefix: 'mailsvc:apppw-create', points: CEILING, duration: HOUR };
    this.counter = redis ? new RateLimiterRedis({ ...opts, storeClient: redis, useRedisPackage: false }) : new RateLimiterMemory(opts);
  }

  /** Counts one creation for the account; 429 (counting nothing) when `perHour` were made in the hour. */
  async consume(accountId: number, perHour: number): Promise<void> {
    const key = String(accountId);
    const r = await this.counter.consume(key, 1);
    if (r.consumedPoints <= perHour) return;
    await this.counter.reward(key, 1);
    const seconds = Math.max(1, Math.ceil(r.msBeforeNext / 1000));
    throw new AppError('rate_limited', `At most ${perHour} app passwords may be made for a mailbox in an hour (MAILSVC_APP_PASSWORD_CREATIONS_PER_HOUR): try again in ${Math.ceil(seconds / 60)} minute(s)`, { retryAfter: seconds });
  }

  /** A creation that did not happen after all (the mailbox was full): not counted. */
  async giveBack(accountId: number): Promise<void> {
    await this.counter.reward(String(accountId), 1);
  }
}
