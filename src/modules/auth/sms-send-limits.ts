import { RateLimiterMemory, RateLimiterRedis, RateLimiterRes } from 'rate-limiter-flexible';
import type { RateLimiterAbstract } from 'rate-limiter-flexible';
import type { Redis } from 'ioredis';
import { AppError } from '../../shared/errors.js';
import { sha256 } from '../../shared/crypto.js';

export type SmsSendQuota = { perIpHour: number; perPhoneHour: number };

const HOUR = 3600;

/**
 * SMS sends per client address and per phone per hour (in Redis when several
 * instances share it): whoever holds the password may start any number of
 * challenges, and each challenge allows three sends, so without this the
 * password alone could send unlimited SMS at the operator's cost.
 */
export class SmsSendLimits {
  private readonly byIp: RateLimiterAbstract;
  private readonly byPhone: RateLimiterAbstract;

  constructor(private readonly quota: SmsSendQuota, redis?: Redis) {
    const make = (keyPrefix: string, points: number): RateLimiterAbstract => {
      const opts = { keyPrefix, points, duration: HOUR };
      return redis ? new RateLimiterRedis({ ...opts, storeClient: redis, useRedisPackage: false }) : new RateLimiterMemory(opts);
    };
    this.byIp = make('mailsvc:sms-ip', quota.perIpHour);
    this.byPhone = make('mailsvc:sms-phone', quota.perPhoneHour);
  }

  private static refused(err: unknown, what: string, limit: number): AppError {
    if (!(err instanceof RateLimiterRes)) throw err;
    const minutes = Math.max(1, Math.ceil(err.msBeforeNext / 60_000));
    return new AppError('rate_limited', `SMS send limit reached: at most ${limit} SMS per hour ${what}; try again in ${minutes} minute(s)`);
  }

  /** Counts one send for the address and the phone; 429 when either is used up (then neither is counted). */
  async consume(ip: string, phone: string): Promise<void> {
    // The phone is kept out of the store's keys: only its hash is used.
    const phoneKey = sha256(phone).toString('hex');
    try {
      await this.byIp.consume(ip, 1);
    } catch (err) {
      throw SmsSendLimits.refused(err, 'from this address', this.quota.perIpHour);
    }
    try {
      await this.byPhone.consume(phoneKey, 1);
    } catch (err) {
      await this.byIp.reward(ip, 1);
      throw SmsSendLimits.refused(err, 'to this phone', this.quota.perPhoneHour);
    }
  }
}
