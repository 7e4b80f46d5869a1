import { existsSync, readFileSync, statSync } from 'node:fs';
import type { Redis } from 'ioredis';
import { writeFileAtomic } from '../../shared/fs-atomic.js';

import type { Limits } from '../../shared/send-rate.js';

/**
 * The rate-limit maps the policy service reads: the effective limits of each
 * account. In Redis when MAILSVC_REDIS_URL is set (every instance reads the
 * same map), else a JSON file replaced atomically and re-read when it changes.
 */
export type LimitMap = {
  get(address: string): Promise<Limits | null>;
  set(address: string, limits: Limits): Promise<void>;
  remove(address: string): Promise<void>;
  replaceAll(entries: Map<string, Limits>): Promise<void>;
};

const REDIS_KEY = 'mailsvc:send-limits';

export class RedisLimitMap implements LimitMap {
  constructor(private readonly redis: Redis) {}
  async get(address: string): Promise<Limits | null> {
    const v = await this.redis.hget(REDIS_KEY, address);
    return v === null ? null : (JSON.parse(v) as Limits);
  }
  async set(address: string, limits: Limits): Promise<void> {
    await this.redis.hset(REDIS_KEY, address, JSON.stringify(limits));
  }
  async remove(address: string): Promise<void> {
    await this.redis.hdel(REDIS_KEY, address);
  }
  async replaceAll(entries: Map<string, Limits>): Promise<void> {
    const tmp = `${REDIS_KEY}:new:${process.pid}:${Date.now()}`;
    const m = this.redis.multi().del(tmp);
    if (entries.size > 0) m.hset(tmp, Object.fromEntries([...entries].map(([k, v]) => [k, JSON.stringify(v)])));
    // RENAME swaps the whole map at once; an empty map just removes the key.
    if (entries.size > 0) m.rename(tmp, REDIS_KEY);
    else m.del(REDIS_KEY);
    await m.exec();
  }
}

export class FileLimitMap implements LimitMap {
  private cache: { mtimeMs: number; entries: Record<string, Limits> } | null = null;
  constructor(private readonly path: string) {}

  private read(): Record<string, Limits> {
    if (!existsSync(this.path)) return {};
    const mtimeMs = statSync(this.path).mtimeMs;
    if (this.cache?.mtimeMs !== mtimeMs) {
      this.cache = { mtimeMs, entries: JSON.parse(readFileSync(this.path, 'utf8')) as Record<string, Limits> };
    }
    return this.cache.entries;
  }
  private write(entries: Record<string, Limits>): void {
    writeFileAtomic(this.path, JSON.stringify(entries) + '\n', 0o640);
    this.cache = null;
  }
  get(address: string): Promise<Limits | null> {
    return Promise.resolve(this.read()[address] ?? null);
  }
  set(address: string, limits: Limits): Promise<void> {
    this.write({ ...this.read(), [address]: limits });
    return Promise.resolve();
  }
  remove(address: string): Promise<void> {
    const { [address]: _gone, ...rest } = this.read();
    this.write(rest);
    return Promise.resolve();
  }
  replaceAll(entries: Map<string, Limits>): Promise<void> {
    this.write(Object.fromEntries(entries));
    return Promise.resolve();
  }
}
