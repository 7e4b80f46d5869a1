import { copyFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Redis } from 'ioredis';

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/**
 * BGSAVE, then wait until LASTSAVE moves past its value before the request
 * (the save finished), then copy the RDB file Redis wrote. The file is read
 * from the path Redis reports (CONFIG GET dir/dbfilename): the backup runs on
 * the Redis host.
 */
export async function copyRedisSnapshot(redis: Redis, target: string, signal?: AbortSignal, timeoutMs = 300_000): Promise<void> {
  const before = await redis.lastsave();
  await redis.bgsave().catch((err: unknown) => {
    // A save already running (another BGSAVE, or the server's own schedule) is fine: its end moves LASTSAVE too.
    if (!(err instanceof Error && /already in progress/i.test(err.message))) throw err;
  });
  const deadline = Date.now() + timeoutMs;
  // LASTSAVE has one-second resolution: a save that ends within the same second as the previous one is seen once a second has passed.
  while ((await redis.lastsave()) === before) {
    if (signal?.aborted) throw new Error('interrupted while Redis was saving');
    if (Date.now() > deadline) throw new Error(`Redis did not finish BGSAVE within ${timeoutMs / 1000} s`);
    await sleep(200);
  }
  const dir = ((await redis.config('GET', 'dir')) as string[])[1] ?? '';
  const file = ((await redis.config('GET', 'dbfilename')) as string[])[1] ?? 'dump.rdb';
  copyFileSync(join(dir, file), target);
}
