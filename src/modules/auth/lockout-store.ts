import type { Redis } from 'ioredis';
import { randomId } from '../../shared/crypto.js';

export type LockoutLimits = { failLimit: number; windowSeconds: number; blockSeconds: number };

/** `ok`: a slot is held; `busy`: every free slot is held by attempts still running; `blocked`: 429. */
export type ReserveResult = { state: 'ok'; id: string } | { state: 'busy' } | { state: 'blocked' };
/** `failure` keeps the slot as a counted failure; `release` gives it back; `clear` gives it back and forgets the failures. */
export type Settlement = 'failure' | 'release' | 'clear';

/**
 * Per address: failures counted in the window, attempts in flight (each on a
 * lease, so a crashed instance cannot hold a slot for ever), and the block.
 * A slot is free while failures + attempts in flight < limit; so at most
 * `limit` secrets are ever evaluated before the block, however many run at once.
 */
export type LockoutStore = {
  reserve(ip: string): Promise<ReserveResult>;
  settle(ip: string, id: string, how: Settlement): Promise<void>;
  /** Throws nothing, counts nothing: is the address blocked (or does it find the limit reached, which starts the block)? */
  blocked(ip: string): Promise<boolean>;
};

/** A slot is given back by itself after this long, should its attempt never settle (a crash). */
export const LEASE_MS = 30_000;

type Entry = { failures: number; windowEnd: number; inflight: Map<string, number>; blockedUntil: number };

export class MemoryLockoutStore implements LockoutStore {
  private readonly entries = new Map<string, Entry>();
  private ops = 0;

  constructor(private readonly limits: LockoutLimits, private readonly now: () => number = Date.now) {}

  private entry(ip: string, t: number): Entry {
    if (++this.ops % 1000 === 0) this.sweep(t);
    let e = this.entries.get(ip);
    if (!e) {
      e = { failures: 0, windowEnd: 0, inflight: new Map(), blockedUntil: 0 };
      this.entries.set(ip, e);
    }
    if (e.windowEnd <= t) e.failures = 0;
    for (const [id, until] of e.inflight) if (until <= t) e.inflight.delete(id);
    return e;
  }

  /** Entries with nothing left to remember are dropped, so the map stays small. */
  private sweep(t: number): void {
    for (const [ip, e] of this.entries) {
      if (e.blockedUntil <= t && e.windowEnd <= t && [...e.inflight.values()].every((until) => until <= t)) this.entries.delete(ip);
    }
  }

  /** The attempt that finds the limit of failures already counted starts the block. */
  private checkBlock(e: Entry, t: number): boolean {
    if (e.blockedUntil > t) return true;
    if (e.failures < this.limits.failLimit) return false;
    e.blockedUntil = t + this.limits.blockSeconds * 1000;
    e.failures = 0;
    return true;
  }

  reserve(ip: string): Promise<ReserveResult> {
    const t = this.now();
    const e = this.entry(ip, t);
    if (this.checkBlock(e, t)) return Promise.resolve({ state: 'blocked' });
    if (e.failures + e.inflight.size >= this.limits.failLimit) return Promise.resolve({ state: 'busy' });
    const id = randomId(9);
    e.inflight.set(id, t + LEASE_MS);
    return Promise.resolve({ state: 'ok', id });
  }

  settle(ip: string, id: string, how: Settlement): Promise<void> {
    const t = this.now();
    const e = this.entry(ip, t);
    e.inflight.delete(id);
    if (how === 'failure') {
      if (e.failures === 0) e.windowEnd = t + this.limits.windowSeconds * 1000;
      e.failures += 1;
    } else if (how === 'clear') {
      e.failures = 0;
    }
    return Promise.resolve();
  }

  blocked(ip: string): Promise<boolean> {
    const t = this.now();
    return Promise.resolve(this.checkBlock(this.entry(ip, t), t));
  }
}

// KEYS: failures, in-flight leases (sorted set, score = lease end), block.
// Redis's own clock, so that every instance agrees on lease ends.
const CLOCK = `local t = redis.call('TIME') local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)`;
const CHECK_BLOCK = `
local function check_block(limit, block_ms)
  if redis.call('EXISTS', KEYS[3]) == 1 then return true end
  if tonumber(redis.call('GET', KEYS[1]) or '0') >= limit then
    redis.call('SET', KEYS[3], '1', 'PX', block_ms)
    redis.call('DEL', KEYS[1])
    return true
  end
  return false
end`;

// ARGV: limit, block ms, lease ms, reservation id. Returns 1 ok, 0 busy, -1 blocked.
const RESERVE = `${CLOCK}${CHECK_BLOCK}
local limit = tonumber(ARGV[1])
if check_block(limit, tonumber(ARGV[2])) then return -1 end
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now)
local failures = tonumber(redis.call('GET', KEYS[1]) or '0')
if failures + redis.call('ZCARD', KEYS[2]) >= limit then return 0 end
redis.call('ZADD', KEYS[2], now + tonumber(ARGV[3]), ARGV[4])
redis.call('PEXPIRE', KEYS[2], tonumber(ARGV[3]))
return 1`;

// ARGV: reservation id, settlement, window ms.
const SETTLE = `
redis.call('ZREM', KEYS[2], ARGV[1])
if ARGV[2] == 'failure' then
  if redis.call('INCR', KEYS[1]) == 1 then redis.call('PEXPIRE', KEYS[1], tonumber(ARGV[3])) end
elseif ARGV[2] == 'clear' then
  redis.call('DEL', KEYS[1])
end
return 1`;

// ARGV: limit, block ms. Returns 1 when blocked.
const BLOCKED = `${CHECK_BLOCK}
if check_block(tonumber(ARGV[1]), tonumber(ARGV[2])) then return 1 end
return 0`;

/** The same counting in Redis, shared by every instance; each step is one Lua script, so atomic. */
export class RedisLockoutStore implements LockoutStore {
  /** `prefix`: the counters' key prefix (the user portal counts apart from the admin API). */
  constructor(private readonly limits: LockoutLimits, private readonly redis: Redis, private readonly prefix = 'authfail') {}

  private keys(ip: string): [string, string, string] {
    const p = this.prefix;
    return [`mailsvc:${p}:${ip}`, `mailsvc:${p}-inflight:${ip}`, `mailsvc:${p}-block:${ip}`];
  }

  async reserve(ip: string): Promise<ReserveResult> {
    const id = randomId(9);
    const { failLimit, blockSeconds } = this.limits;
    const r = Number(await this.redis.eval(RESERVE, 3, ...this.keys(ip), failLimit, blockSeconds * 1000, LEASE_MS, id));
    return r === 1 ? { state: 'ok', id } : r === 0 ? { state: 'busy' } : { state: 'blocked' };
  }

  async settle(ip: string, id: string, how: Settlement): Promise<void> {
    await this.redis.eval(SETTLE, 3, ...this.keys(ip), id, how, this.limits.windowSeconds * 1000);
  }

  async blocked(ip: string): Promise<boolean> {
    return Number(await this.redis.eval(BLOCKED, 3, ...this.keys(ip), this.limits.failLimit, this.limits.blockSeconds * 1000)) === 1;
  }
}
