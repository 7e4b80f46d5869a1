import type { Redis } from 'ioredis';
import type { Db } from '../../db/database.js';
import { objectCounts } from '../../db/object-counts.js';
import type { Schema } from '../../db/migrate.js';
import { ExecError } from '../../adapters/exec.js';
import { directorySize, diskUsage, memory } from '../../adapters/host/host.js';
import type { Clock } from '../../shared/clock.js';
import { SERVICE_VERSION } from '../../shared/version.js';
import type { QueueCounter } from '../queue/index.js';
import { probeComponents, rspamdStat } from './components.js';
import type { Component, ComponentDeps } from './components.js';
import { instances } from './heartbeat.js';
import type { Instance } from './heartbeat.js';
import { probe } from './probe.js';
import type { Probed } from './probe.js';

export type ReportSettings = { dataDir: string; mailStorage: string; diskPercent: number; queueLimit: number; timeoutMs: number; rspamdController: string };

export type ReportItem = Probed<Record<string, unknown>> & { name: string; flagged: boolean };
export type PerformanceReport = { generated_at: string; flagged: string[]; items: ReportItem[] };
export type Topology = { generated_at: string; instances: Array<Instance & { reachable: boolean | null }>; components: Component[] };

const redisField = (info: string, key: string): number | null => {
  const v = new RegExp(`^${key}:(\\S+)`, 'm').exec(info)?.[1];
  return v === undefined ? null : Number(v);
};

export class ReportService {
  constructor(
    private readonly deps: ComponentDeps & { db: Db; schema: Pick<Schema, 'latest' | 'version'>; redis: Redis | undefined; queue: QueueCounter },
    private readonly s: ReportSettings,
    private readonly clock: Clock,
  ) {}

  components(): Promise<Component[]> {
    return probeComponents(this.deps);
  }

  /**
   * The performance report: every item of the spec, each probe with its own
   * time limit; an item is flagged when a threshold is crossed or a
   * component is down (unknown is shown, never flagged).
   */
  async performance(): Promise<PerformanceReport> {
    const ms = this.s.timeoutMs;
    const { db, redis, queue } = this.deps;
    // The daemons first, alone, as topology probes them: the same state in the same words, not
    // "no answer in time" because the queue scan and du of the other items ran beside them.
    const components = await this.components();
    const [queueItem, storage, database, cache, disks, mem, spam] = await Promise.all([
      probe<Record<string, unknown>>(ms, async () => {
        const counts = await queue.counts();
        const total = Object.values(counts).reduce((a, b) => a + b, 0);
        return { status: 'up', detail: null, total, limit: this.s.queueLimit, by_queue: counts };
      }),
      probe<Record<string, unknown>>(ms, async () => {
        try {
          return { status: 'up', detail: null, path: this.s.mailStorage, bytes: await directorySize(this.s.mailStorage, ms) };
        } catch (err) {
          // No permission or no such directory: the report cannot know the size, the storage is not "down".
          return { status: 'unknown', detail: err instanceof ExecError ? err.message : String(err), path: this.s.mailStorage };
        }
      }),
      probe<Record<string, unknown>>(ms, async () => {
        const { schema } = this.deps;
        const version = await schema.version(db);
        return { status: 'up', detail: version === schema.latest ? null : `schema ${version ?? 'none'}, latest ${schema.latest}: run mailsvc db migrate`, schema_version: version, rows: await objectCounts(db) };
      }),
      probe<Record<string, unknown>>(ms, async () => {
        if (!redis) return { status: 'unknown', detail: 'not configured (MAILSVC_REDIS_URL unset)' };
        try {
          await this.deps.connectRedis();
        } catch (err) {
          return { status: 'down', detail: err instanceof Error ? err.message : String(err) };
        }
        const info = await redis.info();
        return {
          status: 'up', detail: null,
          used_memory_bytes: redisField(info, 'used_memory'), connected_clients: redisField(info, 'connected_clients'),
          commands_processed: redisField(info, 'total_commands_processed'), keyspace_hits: redisField(info, 'keyspace_hits'), keyspace_misses: redisField(info, 'keyspace_misses'),
        };
      }),
      probe<Record<string, unknown>>(ms, async () => {
        const paths = [...new Set([this.s.dataDir, this.s.mailStorage, '/'])];
        const found = await Promise.all(paths.map((p) => diskUsage(p).catch(() => null)));
        const file_systems = found.filter((f) => f !== null);
        return { status: file_systems.length > 0 ? 'up' : 'unknown', detail: null, limit_percent: this.s.diskPercent, file_systems };
      }),
      probe<Record<string, unknown>>(ms, async () => ({ status: 'up', detail: null, ...(await memory()) })),
      probe<Record<string, unknown>>(ms, async () => {
        const stat = await rspamdStat(this.s.rspamdController, ms);
        return { status: 'up', detail: null, scanned: stat.scanned ?? null, learned: stat.learned ?? null, actions: stat.actions ?? null };
      }).then((p) => (p.status === 'up' ? p : { status: 'unknown' as const, detail: `not available (${p.detail ?? 'no answer'})` })),
    ]);
    const items: ReportItem[] = [
      ...components.map((c) => ({ ...c, name: `service ${c.name}`, flagged: c.status === 'down' })),
      { name: 'mail queue', ...queueItem, flagged: typeof queueItem.total === 'number' && queueItem.total > this.s.queueLimit },
      { name: 'mail storage', ...storage, flagged: false },
      { name: 'database', ...database, flagged: database.detail !== null && database.status === 'up' },
      { name: 'cache', ...cache, flagged: false },
      {
        name: 'disk', ...disks,
        flagged: Array.isArray(disks.file_systems) && (disks.file_systems as Array<{ used_percent: number }>).some((f) => f.used_percent > this.s.diskPercent),
      },
      { name: 'memory', ...mem, flagged: false },
      { name: 'spam filter', ...spam, flagged: false },
    ];
    return { generated_at: new Date(this.clock.now()).toISOString(), flagged: items.filter((i) => i.flagged).map((i) => i.name), items };
  }

  /** The API instances (through their Redis heartbeats) and every component with address, version and reachability. */
  async topology(): Promise<Topology> {
    const [components, seen] = await Promise.all([
      this.components(),
      this.deps.redis
        ? probe<{ list: Instance[] }>(this.s.timeoutMs, async () => {
          await this.deps.connectRedis();
          return { status: 'up', detail: null, list: await instances(this.deps.redis as Redis, this.clock.now()) };
        })
        : null,
    ]);
    const list = seen?.list ?? [];
    // Seen within three heartbeats: reachable; older (up to ten minutes): probably gone.
    const fresh = (i: Instance) => this.clock.now() - Date.parse(i.last_seen) < 45_000;
    return {
      generated_at: new Date(this.clock.now()).toISOString(),
      instances: list.map((i) => ({ ...i, reachable: fresh(i) })),
      components: [{ name: 'mailsvc', status: 'up', detail: null, address: null, version: SERVICE_VERSION }, ...components],
    };
  }
}
