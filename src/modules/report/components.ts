import type { Redis } from 'ioredis';
import type { Db, DialectName } from '../../db/database.js';
import { pingDb } from '../../db/database.js';
import { serverVersion } from '../../db/object-counts.js';
import { programVersion, serviceState } from '../../adapters/host/host.js';
import type { QueueCounter } from '../queue/index.js';
import type { HelperClient } from '../../adapters/helper-client.js';
import { HelperError } from '../../adapters/helper-client.js';
import { addressOf, probe } from './probe.js';
import type { ProbeStatus } from './probe.js';

export type Component = { name: string; status: ProbeStatus; detail: string | null; address: string | null; version: string | null };

export type ComponentDeps = {
  db: Db;
  dialect: DialectName;
  databaseUrl: string;
  redis: Redis | undefined;
  redisUrl: string | undefined;
  /** Connects Redis when it is not yet (a CLI process); rejects when it cannot. */
  connectRedis: () => Promise<void>;
  queue: QueueCounter;
  helper: HelperClient;
  rspamdController: string;
  timeoutMs: number;
  /**
   * Whether mailsvc's firewall is switched on (the firewall module's
   * firewall-enabled); rejects when that cannot be read. nftables.service
   * only matters when it is: otherwise nothing of mailsvc needs it.
   */
  firewallEnabled?: () => Promise<boolean>;
};

/** Debian package and systemd unit of each daemon mailsvc manages. */
const DAEMONS = [
  { name: 'dovecot', pkg: 'dovecot-core', unit: 'dovecot' },
  { name: 'fail2ban', pkg: 'fail2ban', unit: 'fail2ban' },
  { name: 'nftables', pkg: 'nftables', unit: 'nftables' },
  { name: 'postsrsd', pkg: 'postsrsd', unit: 'postsrsd' },
] as const;

/** What topology, the report and doctor say of a daemon whose package is not there (one wording for one state). */
export const NOT_INSTALLED = 'not installed here';

/**
 * nftables.service not running while mailsvc's firewall is off (never
 * switched on, or switched off): not a failure, since nothing of mailsvc
 * needs it then (fail2ban's tables are loaded by fail2ban itself).
 */
export const NFTABLES_NOT_NEEDED = "not running; not needed while mailsvc's firewall is off (firewall-enabled no)";

const pkgVersion = (pkg: string, ms: number) => programVersion('dpkg-query', ['-W', '-f=${Version}\n', pkg], /^(\S+)$/m, ms);

/**
 * The one place that decides a daemon's state and its words, for the
 * performance report, topology and /health/details alike: running → up;
 * not running → down "not running"; not installed → unknown "not installed";
 * anything else (no answer in time, no systemd) → unknown with why.
 */
export function daemonState(seen: 'running' | 'stopped' | 'not-installed' | { unknown: string }, why?: string): { status: ProbeStatus; detail: string | null } {
  if (seen === 'running') return { status: 'up', detail: null };
  if (seen === 'stopped') return { status: 'down', detail: why ? `not running (${why})` : 'not running' };
  if (seen === 'not-installed') return { status: 'unknown', detail: NOT_INSTALLED };
  return { status: 'unknown', detail: seen.unknown };
}

function fromUnit(state: string | null, installed: boolean): { status: ProbeStatus; detail: string | null } {
  if (state === 'active') return daemonState('running');
  if (state === 'inactive' || state === 'failed') return daemonState('stopped', `systemd: ${state}`);
  if (state !== null) return daemonState({ unknown: `systemd: ${state}` });
  return installed ? daemonState({ unknown: 'systemd cannot tell (not running under systemd?)' }) : daemonState('not-installed');
}

/** A daemon by its Debian package (version, installed) and its systemd unit (running). */
export function probeDaemon(x: { name: string; pkg: string; unit: string }, ms: number): Promise<Component> {
  return probe<Component>(ms, async () => {
    const [version, state] = await Promise.all([pkgVersion(x.pkg, ms), serviceState(x.unit, ms)]);
    return { ...fromUnit(state, version !== null), version };
  }).then((p) => ({ name: x.name, address: null, version: null, ...p }));
}

async function rspamdStat(base: string, ms: number): Promise<Record<string, unknown>> {
  const res = await fetch(`${base}/stat`, { signal: AbortSignal.timeout(ms), redirect: 'error' });
  if (!res.ok) throw new Error(`Rspamd controller answered ${res.status}`);
  return (await res.json()) as Record<string, unknown>;
}

/** Each component's status, address and version, every probe with its own time limit, all at once. */
export async function probeComponents(d: ComponentDeps): Promise<Component[]> {
  const ms = d.timeoutMs;
  const database = probe<Component>(ms, async () => {
    const up = await pingDb(d.db);
    return up
      ? { status: 'up', detail: null, version: await serverVersion(d.db, d.dialect).catch(() => null) }
      : { status: 'down', detail: 'the database does not answer' };
  }).then((p) => ({ name: 'database', address: addressOf(d.databaseUrl), version: null, ...p }));

  const redis = probe<Component>(ms, async () => {
    if (!d.redis) return { status: 'unknown', detail: 'not configured (MAILSVC_REDIS_URL unset)' };
    try {
      await d.connectRedis();
      const info = await d.redis.info('server');
      return { status: 'up', detail: null, version: /^redis_version:(\S+)/m.exec(info)?.[1] ?? null };
    } catch (err) {
      return { status: 'down', detail: err instanceof Error ? err.message : String(err) };
    }
  }).then((p) => ({ name: 'redis', address: d.redisUrl ? addressOf(d.redisUrl) : null, version: null, ...p }));

  const postfix = probe<Component>(ms, async () => {
    const version = await pkgVersion('postfix', ms);
    try {
      // `postfix status` through the helper (it reads the master's pid as root): exit 0 running, 1 not.
      const r = await d.helper.run('postfix-status', []);
      return { ...daemonState(r.code === 0 ? 'running' : 'stopped', 'postfix status'), version };
    } catch (err) {
      const notInstalled = err instanceof HelperError && err.exec?.kind === 'not-found';
      return { ...daemonState(notInstalled ? 'not-installed' : { unknown: err instanceof Error ? err.message : String(err) }), version };
    }
  }).then((p) => ({ name: 'postfix', address: null, version: null, ...p }));

  const rspamd = probe<Component>(ms, async () => {
    const version = await pkgVersion('rspamd', ms);
    try {
      await rspamdStat(d.rspamdController, ms);
      return { status: 'up', detail: null, version };
    } catch (err) {
      const cause = (err as { cause?: { code?: string } }).cause?.code;
      if (cause === 'ECONNREFUSED') return { ...(version ? daemonState('stopped', 'the controller refuses connections') : daemonState('not-installed')), version };
      return { ...daemonState({ unknown: err instanceof Error ? err.message : String(err) }), version };
    }
  }).then((p) => ({ name: 'rspamd', address: addressOf(d.rspamdController), version: null, ...p }));

  const daemons = DAEMONS.map((x) => (x.name === 'nftables' ? probeDaemon(x, ms).then((c) => nftablesNeeded(c, d.firewallEnabled)) : probeDaemon(x, ms)));
  return Promise.all([database, redis, postfix, rspamd, ...daemons]);
}

/** nftables down while mailsvc's firewall is off is `unknown` (not needed), never `down`; when the firewall state cannot be read it stays down. */
async function nftablesNeeded(c: Component, firewallEnabled: (() => Promise<boolean>) | undefined): Promise<Component> {
  if (c.status !== 'down' || !firewallEnabled) return c;
  const on = await firewallEnabled().catch(() => null);
  return on === false ? { ...c, status: 'unknown', detail: NFTABLES_NOT_NEEDED } : c;
}

export { rspamdStat };
