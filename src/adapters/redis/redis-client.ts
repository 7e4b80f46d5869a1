import { createRequire } from 'node:module';
import type { Redis } from 'ioredis';
import type { Logger } from 'pino';

/** How long one command may take before it fails; Redis answers in well under a millisecond. */
export const COMMAND_TIMEOUT_MS = 1000;
const CONNECT_TIMEOUT_MS = 2000;

/**
 * The one Redis client of the service, made to fail fast: when Redis is down
 * or stalls, a command fails at once (no offline queue) or after
 * COMMAND_TIMEOUT_MS, instead of waiting for reconnection attempts while the
 * API request hangs. The client keeps reconnecting in the background (up to
 * every 2 s); connection errors are logged once per outage, not per attempt.
 * `lazyConnect`: the caller awaits `connect()` so a Redis missing at start
 * stops the start.
 */
// ioredis is loaded when the first client is made: a command that never uses Redis never loads it.
const require = createRequire(import.meta.url);

export function createRedis(url: string, log: Logger): Redis {
  const { Redis: RedisClient } = require('ioredis') as { Redis: typeof Redis };
  const redis = new RedisClient(url, {
    lazyConnect: true,
    enableOfflineQueue: false,
    autoResendUnfulfilledCommands: false,
    maxRetriesPerRequest: 0,
    connectTimeout: CONNECT_TIMEOUT_MS,
    commandTimeout: COMMAND_TIMEOUT_MS,
    retryStrategy: (times) => Math.min(times * 200, 2000),
  });
  let down = false;
  // Before the first connection the caller's connect() reports the failure (one clear line at
  // start, or from a CLI command); the warning is for an outage of a running client.
  let wasReady = false;
  const outage = (message: string): void => {
    if (down || !wasReady) return;
    down = true;
    log.warn({ err: { message } }, 'redis connection error: requests that need Redis are answered 503 until it is back');
  };
  // Without an error listener ioredis prints every connection error as an unhandled event.
  redis.on('error', (err: Error) => outage(err.message));
  // Emitted at once when a working connection drops (not after quit()).
  redis.on('reconnecting', () => outage('connection lost'));
  redis.on('ready', () => {
    if (down) log.info('redis connection restored');
    down = false;
    wasReady = true;
  });
  return redis;
}

const UNAVAILABLE_MESSAGES = [
  "Stream isn't writeable and enableOfflineQueue options is false",
  'Connection is closed.',
  'Command timed out',
  'Redis connection is not ready',
];

/**
 * Whether an error means "Redis could not be asked" (down, unreachable,
 * stalled), as opposed to Redis answering with an error.
 */
export function isRedisUnavailable(err: unknown): boolean {
  if (!(err instanceof Error)) return false;
  if (err.name === 'MaxRetriesPerRequestError') return true;
  return UNAVAILABLE_MESSAGES.includes(err.message);
}

/** Whether a client is connected and ready now; no round trip (cheap enough for `/health`). */
export const redisReady = (redis: Redis): boolean => redis.status === 'ready';
