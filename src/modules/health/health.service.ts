import type { Redis } from 'ioredis';
import type { Db, DialectName } from '../../db/database.js';
import { pingDb } from '../../db/database.js';
import { LATEST_SCHEMA, schemaVersion } from '../../db/migrate.js';
import type { Clock } from '../../shared/clock.js';
import { SERVICE_VERSION } from '../../shared/version.js';
import { redisReady } from '../../adapters/redis/redis-client.js';

export type { HealthDetails } from './schema.js';
import type { HealthDetails } from './schema.js';
import type { ComponentProbe } from '../report/index.js';

/** The newest backup and its last verify, as the backups module reports it. */
export type BackupSummary = { id: string; completed_at: string; verify_ok: boolean | null; verified_at: string | null };

export class HealthService {
  private readonly startedAt: number;

  constructor(
    private readonly db: Db,
    private readonly dialect: DialectName,
    private readonly redis: Redis | undefined,
    private readonly clock: Clock,
    private readonly probes?: ComponentProbe,
    private readonly backups: () => Promise<BackupSummary | null> = () => Promise.resolve(null),
  ) {
    this.startedAt = clock.now();
  }

  /**
   * The public check, answered without a round trip: degraded when Redis is
   * configured and its connection is not up (sign-in and every Redis-backed
   * check then answer 503). The database is probed by `details()` only.
   */
  live(): 'ok' | 'degraded' {
    return this.redis === undefined || redisReady(this.redis) ? 'ok' : 'degraded';
  }

  async details(): Promise<HealthDetails> {
    // Each component's probe has its own time limit (MAILSVC_PROBE_TIMEOUT_MS): one hanging daemon cannot hang this answer.
    const components = this.probes ? this.probes.components() : Promise.resolve([]);
    const reachable = await pingDb(this.db);
    const version = reachable ? await schemaVersion(this.db).catch(() => null) : null;
    let redisOk: boolean | null = null;
    if (this.redis) redisOk = await this.redis.ping().then((r) => r === 'PONG', () => false);
    const last = await this.backups().catch(() => null);
    const ok = reachable && version === LATEST_SCHEMA && redisOk !== false && last?.verify_ok !== false;
    return {
      status: ok ? 'ok' : 'degraded',
      version: SERVICE_VERSION,
      uptime_seconds: Math.floor((this.clock.now() - this.startedAt) / 1000),
      database: { dialect: this.dialect, reachable, schema_version: version, schema_latest: LATEST_SCHEMA },
      redis: { configured: this.redis !== undefined, reachable: redisOk },
      components: Object.fromEntries((await components).map((c) => [c.name, { status: c.status, detail: c.detail }])),
      backups: { last_backup: last?.id ?? null, completed_at: last?.completed_at ?? null, verify_ok: last?.verify_ok ?? null, verified_at: last?.verified_at ?? null },
    };
  }
}
