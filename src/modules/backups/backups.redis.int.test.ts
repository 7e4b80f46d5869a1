import { describe, expect, it } from 'vitest';
import { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { REDIS_URL, createTestDatabase } from '../../../test/helpers/dialects.js';
import { expectOk, json } from '../../../test/helpers/cli.js';
import { backupEnv, makeMailStorage } from '../../../test/helpers/backups.js';
import { skipNotice } from '../../../test/helpers/services.js';

// Redis DB 6 is this feature's (other tests use others); nothing is flushed.
const URL6 = `${REDIS_URL.replace(/\/\d*$/, '')}/6`;

async function redisUp(): Promise<Redis | null> {
  const r = new Redis(URL6, { lazyConnect: true, maxRetriesPerRequest: 1, retryStrategy: () => null });
  try {
    await r.connect();
    await r.ping();
    return r;
  } catch (err) {
    skipNotice(`Redis at ${URL6}`, err instanceof Error ? err.message : String(err));
    r.disconnect();
    return null;
  }
}

describe('INCLUDE_REDIS=yes', () => {
  it('BGSAVE, waits for LASTSAVE to move, and the backup holds an RDB with a key written just before', async (ctx) => {
    const redis = await redisUp();
    if (!redis) return ctx.skip();
    const key = `mailsvc-backup-test-${randomBytes(6).toString('hex')}`;
    const db = await createTestDatabase('sqlite');
    const t = backupEnv(db.url, { MAILSVC_BACKUP_INCLUDE_REDIS: 'yes', MAILSVC_REDIS_URL: URL6 });
    try {
      await redis.set(key, 'kept-by-the-backup', 'EX', 600);
      expectOk(await t.cli(['db', 'migrate']));
      makeMailStorage(t.mail, 1, 3);
      const r = await t.cli(['backup', 'run', '--json'], 400_000);
      expectOk(r);
      const dir = String(json(r).path);
      const manifest = JSON.parse(readFileSync(join(dir, 'manifest.json'), 'utf8')) as { redis: { included: boolean }; artifacts: { name: string; kind: string }[] };
      expect(manifest.redis.included).toBe(true);
      expect(manifest.artifacts.find((a) => a.kind === 'redis')?.name).toBe('redis.rdb');
      const rdb = readFileSync(join(dir, 'redis.rdb'));
      expect(rdb.subarray(0, 5).toString('latin1')).toBe('REDIS');
      expect(rdb.includes(Buffer.from(key))).toBe(true);
      expectOk(await t.cli(['backup', 'verify']));
    } finally {
      await redis.del(key);
      redis.disconnect();
      rmSync(t.dir, { recursive: true, force: true });
      await db.drop();
    }
  }, 420_000);
});
