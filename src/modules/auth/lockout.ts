import type { Redis } from 'ioredis';
import { AppError } from '../../shared/errors.js';
import { MemoryLockoutStore, RedisLockoutStore } from './lockout-store.js';
import type { LockoutLimits, LockoutStore, Settlement } from './lockout-store.js';

export type { LockoutLimits };

/** How long an attempt waits for a slot held by attempts still running before it gives up with 429. */
const MAX_WAIT_MS = 10_000;

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * One reserved attempt: exactly one of its three ends must be called.
 * `failed` keeps the slot as a counted failure; `passed` gives it back;
 * `signedIn` gives it back and forgets the address's failures.
 */
export class Attempt {
  private settled = false;
  constructor(private readonly store: LockoutStore, private readonly ip: string, private readonly id: string) {}

  private async settle(how: Settlement): Promise<void> {
    if (this.settled) return;
    this.settled = true;
    await this.store.settle(this.ip, this.id, how);
  }

  failed(): Promise<void> {
    return this.settle('failure');
  }
  passed(): Promise<void> {
    return this.settle('release');
  }
  signedIn(): Promise<void> {
    return this.settle('clear');
  }
}

/**
 * Authentication failures per client address, in memory or in Redis (shared
 * by every instance).
 *
 * An attempt reserves its slot BEFORE the secret is looked at: a slot is free
 * while failures + attempts in flight < api-auth-fail-limit. A failure keeps
 * its slot; a success gives it back. So however many attempts run at once,
 * on however many instances, at most the limit of secrets are evaluated
 * before the block; the attempt that finds the limit of failures counted is
 * answered 429 and starts the block. An attempt that finds every free slot
 * held by attempts still running waits for them (parallel right answers never
 * block each other, they only take turns).
 */
export class Lockout {
  private readonly store: LockoutStore;

  constructor(readonly limits: LockoutLimits, redis?: Redis, store?: LockoutStore) {
    this.store = store ?? (redis ? new RedisLockoutStore(limits, redis) : new MemoryLockoutStore(limits));
  }

  private tooMany(): AppError {
    return new AppError('rate_limited', 'Too many authentication attempts', { retryAfter: this.limits.blockSeconds });
  }

  /** Reserves one attempt for the address; 429 when it is blocked (nothing is evaluated then). */
  async reserve(ip: string): Promise<Attempt> {
    const deadline = Date.now() + MAX_WAIT_MS;
    let pause = 2;
    for (;;) {
      const r = await this.store.reserve(ip);
      if (r.state === 'ok') return new Attempt(this.store, ip, r.id);
      if (r.state === 'blocked' || Date.now() >= deadline) throw this.tooMany();
      // Jitter, so that waiters do not all come back at the same instant.
      await sleep(pause + Math.random() * pause);
      pause = Math.min(pause * 2, 50);
    }
  }

  /**
   * Runs `check` on a reserved attempt: a false result or a throw counts as a
   * failure (after `onFailure`, which writes the auth-log line); true gives the
   * slot back unless the caller settles it (see `Attempt`).
   */
  async guard(ip: string, check: () => Promise<boolean>, onFailure: () => void): Promise<{ ok: boolean; attempt: Attempt }> {
    const attempt = await this.reserve(ip);
    let ok = false;
    try {
      ok = await check();
    } finally {
      if (!ok) {
        onFailure();
        await attempt.failed();
      }
    }
    return { ok, attempt };
  }

  /** Counts nothing: is the key blocked (or has it reached the limit, which starts the block)? */
  isBlocked(key: string): Promise<boolean> {
    return this.store.blocked(key);
  }

  /** Throws 429 when the address is blocked; counts nothing (SMS sends). */
  async assertOpen(ip: string): Promise<void> {
    if (await this.store.blocked(ip)) throw this.tooMany();
  }
}
