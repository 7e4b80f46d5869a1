import type { Redis } from 'ioredis';
import type { Db, DialectName } from '../../db/database.js';
import { pingDb } from '../../db/database.js';
import type { Schema } from '../../db/migrate.js';
import type { Clock } from '../../shared/clock.js';
import { SERVICE_VERSION } from '../../shared/version.js';
import { redisReady } from '../../adapters/redis/redis-client.js';

export type { HealthDetails } from './schema.js';
import type { HealthDetails } from './schema.js';
import type { ComponentProbe } from '../report/index.js';

/** The certificates as served, as the tls module keeps them. */
export type TlsSummary = HealthDetails['tls'];
const NO_TLS: TlsSummary = { last_check_at: null, problems: [], last_deploy: null };

/** The newest backup and its last verify, as the backups module reports it. */
export type BackupSummary = { id: string; completed_at: string; verify_ok: boolean | null; verified_at: string | null };

export class HealthService {
  private readonly startedAt: number;

  constructor(
    private readonly db: Db,
    private readonly schema: Pick<Schema, 'latest' | 'version'>,
    private readonly dialect: DialectName,
    private readonly redis: Redis | undefined,
    private readonly clock: Clock,
    private readonly probes?: ComponentProbe,
    private readonly backups: () => Promise<BackupSummary | null> = () => Promise.resolve(null),
    /** Time limit of each part of details() (MAILSVC_PROBE_TIMEOUT_MS). */
    private readonly timeoutMs = 3000,
    private readonly tls: () => Promise<TlsSummary> = () => Promise.resolve(NO_TLS),
    /** Certificates of ours that expire within the alarm days (the certs module's). */
    private readonly certificates: () => Promise<{ name: string; days_left: number }[]> = () => Promise.resolve([]),
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

  /**
   * Every part is asked at once, each within the probe time limit (a hanging
   * database, Redis or daemon cannot hang the answer). The status is
   * `degraded` when the database does not answer, the schema is behind, Redis
   * (when configured) does not answer, the last backup verify failed, or a
   * component is `down`; `degraded_by` says which. A component `unknown`
   * (could not tell) does not make it degraded. `withComponents: false` leaves
   * the daemons' probes out (they start a dozen processes): the status then
   * covers the database, the schema, Redis and the backups only.
   */
  async details(withComponents = true): Promise<HealthDetails> {
    const ms = this.timeoutMs;
    const components = this.probes && withComponents ? within(ms + 500, this.probes.components(), []) : Promise.resolve([]);
    const database = within(ms, (async () => {
      const reachable = await pingDb(this.db);
      return { reachable, version: reachable ? await this.schema.version(this.db).catch(() => null) : null };
    })(), { reachable: false, version: null });
    // A Redis that does not answer in time is not reachable for this answer (its component says unknown: could not tell why).
    const redis = this.redis ? within(ms, this.redis.ping().then((r) => r === 'PONG', () => false), false) : Promise.resolve(null);
    const backups = within(ms, this.backups().catch(() => null), null);
    const certificates = within(ms, this.tls().catch(() => NO_TLS), NO_TLS);
    const certs = within(ms, this.certificates().catch(() => []), []);
    const [comps, db, redisOk, last, tls, expiring] = await Promise.all([components, database, redis, backups, certificates, certs]);
    const degradedBy = [
      ...(db.reachable ? [] : ['database']),
      ...(db.reachable && db.version !== this.schema.latest ? ['schema'] : []),
      ...(redisOk === false ? ['redis'] : []),
      ...(last?.verify_ok === false ? ['backup verify'] : []),
      ...comps.filter((c) => c.status === 'down').map((c) => `component ${c.name}`),
      ...tls.problems.map((p) => `tls ${p}`),
      ...(tls.last_deploy?.ok === false ? ['tls deploy'] : []),
      ...expiring.map((c) => (c.days_left < 0 ? `certificate ${c.name} expired` : `certificate ${c.name} expires in ${c.days_left} days`)),
    ];
    return {
      status: degradedBy.length === 0 ? 'ok' : 'degraded',
      degraded_by: degradedBy,
      version: SERVICE_VERSION,
      uptime_seconds: Math.floor((this.clock.now() - this.startedAt) / 1000),
      database: { dialect: this.dialect, reachable: db.reachable, schema_version: db.version, schema_latest: this.schema.latest },
      redis: { configured: this.redis !== undefined, reachable: redisOk },
      components: Object.fromEntries(comps.map((c) => [c.name, { status: c.status, detail: c.detail }])),
      backups: { last_backup: last?.id ?? null, completed_at: last?.completed_at ?? null, verify_ok: last?.verify_ok ?? null, verified_at: last?.verified_at ?? null },
      tls,
    };
  }
}

/** `p`, or `fallback` when it has not settled within `ms`. */
async function within<T>(ms: number, p: Promise<T>, fallback: T): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<T>((resolve) => {
    timer = setTimeout(() => resolve(fallback), ms);
    timer.unref();
  });
  try {
    return await Promise.race([p, late]);
  } finally {
    clearTimeout(timer);
  }
}
