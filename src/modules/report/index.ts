import type { Infra } from '../../infra/index.js';
import { SERVICE_VERSION } from '../../shared/version.js';
import type { QueueCounter } from '../queue/index.js';
import { startHeartbeat } from './heartbeat.js';
import { ReportService } from './report.service.js';

export { reportCommands } from './commands.js';
export type { ReportService, PerformanceReport, Topology } from './report.service.js';
export type { Component } from './components.js';
export { NFTABLES_NOT_NEEDED, NOT_INSTALLED, probeDaemon } from './components.js';

/** What /health/details asks: each component's status, every probe with its own time limit. */
export type ComponentProbe = Pick<ReportService, 'components'>;

export function createReportModule(infra: Pick<Infra, 'db' | 'schema' | 'dialect' | 'redis' | 'settings' | 'clock' | 'connectRedis' | 'helper'>, deps: { queue: QueueCounter; firewallEnabled?: () => Promise<boolean> }) {
  const { settings } = infra;
  const st = settings.stats;
  // Several probes ask at once; ioredis refuses a second connect() while the first is under way.
  let connecting: Promise<void> | undefined;
  const connectRedis = (): Promise<void> => {
    if (infra.redis?.status === 'ready') return Promise.resolve();
    connecting ??= infra.connectRedis().finally(() => (connecting = undefined));
    return connecting;
  };
  const service = new ReportService(
    {
      db: infra.db, schema: infra.schema, dialect: infra.dialect, databaseUrl: settings.databaseUrl, redis: infra.redis, redisUrl: settings.redisUrl,
      connectRedis, queue: deps.queue, helper: infra.helper, rspamdController: st.rspamdController, timeoutMs: st.probeTimeoutMs,
      ...(deps.firewallEnabled ? { firewallEnabled: deps.firewallEnabled } : {}),
    },
    { dataDir: settings.dataDir, mailStorage: st.mailStorage, diskPercent: st.reportDiskPercent, queueLimit: st.reportQueueLimit, timeoutMs: st.probeTimeoutMs, rspamdController: st.rspamdController },
    infra.clock,
  );
  return {
    service,
    /** The running service's heartbeat in Redis (none without Redis): `topology show` lists every instance by it. */
    startHeartbeat: (address: string) => {
      const redis = infra.redis;
      return redis ? startHeartbeat(redis, { address, version: SERVICE_VERSION }, () => infra.clock.now()) : { id: null, close: async () => undefined };
    },
  };
}
export type ReportModule = ReturnType<typeof createReportModule>;
