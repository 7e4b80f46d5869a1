import { hostname } from 'node:os';
import { randomBytes } from 'node:crypto';
import type { Redis } from 'ioredis';

/** What a running service says about itself in Redis, so `topology show` anywhere lists every instance. */
export type Instance = { id: string; host: string; pid: number; address: string; version: string; started_at: string; last_seen: string };

const KEY = 'mailsvc:instances';
const EVERY_MS = 15_000;
/** An instance not seen for this long is dropped from the list (it stopped or lost Redis). */
const FORGET_MS = 10 * 60_000;

/**
 * Writes this instance's heartbeat every 15 s into one Redis hash (field: the
 * instance id), and removes it again on a clean stop.
 */
export function startHeartbeat(redis: Redis, me: { address: string; version: string }, now: () => number): { id: string; close(): Promise<void> } {
  const id = `${hostname()}-${process.pid}-${randomBytes(3).toString('hex')}`;
  const started = new Date(now()).toISOString();
  const beat = () =>
    redis
      .hset(KEY, id, JSON.stringify({ id, host: hostname(), pid: process.pid, address: me.address, version: me.version, started_at: started, last_seen: new Date(now()).toISOString() } satisfies Instance))
      .catch(() => undefined);
  void beat();
  const timer = setInterval(() => void beat(), EVERY_MS);
  timer.unref();
  return {
    id,
    close: async () => {
      clearInterval(timer);
      await redis.hdel(KEY, id).catch(() => undefined);
    },
  };
}

/** Every instance seen within the last 10 minutes, newest heartbeat first; older entries are removed. */
export async function instances(redis: Redis, now: number): Promise<Instance[]> {
  const all = await redis.hgetall(KEY);
  const live: Instance[] = [];
  for (const [field, json] of Object.entries(all)) {
    let i: Instance | null = null;
    try {
      i = JSON.parse(json) as Instance;
    } catch {
      i = null;
    }
    if (!i || now - Date.parse(i.last_seen) > FORGET_MS) await redis.hdel(KEY, field);
    else live.push(i);
  }
  return live.sort((a, b) => b.last_seen.localeCompare(a.last_seen));
}
