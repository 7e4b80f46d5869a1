import { Redis } from 'ioredis';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll } from 'vitest';
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

const LEASE_WAIT_MS = 15 * 60_000;

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * Holds database number `db` of the test Redis for this process until the
 * calling file's (or describe's) afterAll: another `npm test` beside this one
 * (same machine, same Redis) waits for it instead of flushing the database
 * under it. A lease whose process has died is taken over.
 */
function leaseDb(db: number): () => void {
  const dir = join(tmpdir(), `mailsvc-test-redis-${new URL(REDIS_URL).port || '6379'}-db${db}.lock`);
  const owner = join(dir, 'pid');
  const deadline = Date.now() + LEASE_WAIT_MS;
  const pause = new Int32Array(new SharedArrayBuffer(4));
  for (;;) {
    try {
      mkdirSync(dir);
      writeFileSync(owner, String(process.pid));
      break;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      let pid = 0;
      try {
        pid = Number(readFileSync(owner, 'utf8'));
      } catch {
        // being written or removed: look again
      }
      if (pid > 0 && !alive(pid)) rmSync(dir, { recursive: true, force: true });
      else if (Date.now() > deadline) throw new Error(`Redis database ${db} is held by process ${pid} for over ${LEASE_WAIT_MS} ms (${dir})`);
      else Atomics.wait(pause, 0, 0, 200);
    }
  }
  return () => rmSync(dir, { recursive: true, force: true });
}

/**
 * A Redis URL on a database number of its own, so parallel test files do not
 * meet; the number is leased for the file (or describe block) that asks, so
 * a second test run on the same machine does not meet it either.
 */
export function isolatedRedisUrl(db: number): string {
  afterAll(leaseDb(db));
  const u = new URL(REDIS_URL);
  u.pathname = `/${db}`;
  return u.toString();
}
