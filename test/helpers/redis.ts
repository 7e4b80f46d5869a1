import { Redis } from 'ioredis';
import { REDIS_URL } from './dialects.js';
import { skipNotice } from './services.js';

let probe: Promise<string | null> | undefined;

/**
 * How long a Redis that is there may take to connect and answer PING. An absent
 * Redis is told at once (the connection is refused); only a slow answer, a
 * Redis busy beside other test runs on a 2-core machine, uses this time, and a
 * short limit there skipped (or, with services required, failed) the tests.
 */
const PROBE_LIMIT_MS = 20_000;

/** True when Redis answers; else a printed notice (or a failure when services are required). */
export async function redisAvailable(): Promise<boolean> {
  probe ??= (async () => {
    const r = new Redis(REDIS_URL, { lazyConnect: true, connectTimeout: PROBE_LIMIT_MS, commandTimeout: PROBE_LIMIT_MS, maxRetriesPerRequest: 0, retryStrategy: () => null });
    try {
      await r.connect();
      await r.ping();
      return null;
    } catch (err) {
      return err instanceof Error ? err.message : String(err);
    } finally {
      r.disconnect();
    }
  })();
  const why = await probe;
  if (why === null) return true;
  skipNotice(`Redis at ${REDIS_URL}`, why);
  return false;
}

/** A Redis URL on a database number of its own, so parallel test files do not meet. */
export function isolatedRedisUrl(db: number): string {
  const u = new URL(REDIS_URL);
  u.pathname = `/${db}`;
  return u.toString();
}
