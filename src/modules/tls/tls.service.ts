import type { Logger } from 'pino';
import type { Clock } from '../../shared/clock.js';
import type { MetricsRegistry } from '../../infra/index.js';
import type { TlsProber, PortReading, PortTarget } from './prober.js';
import type { PortRow, TlsRepository } from './tls.repository.js';

const DAY = 86_400_000;
/** A served certificate that expires within this many days is a problem (an alarm), whoever issued it. */
export const EXPIRY_ALARM_DAYS = 14;

/** One port as `mailsvc tls check` reports it. */
export type PortReport = {
  service: string;
  port: number;
  served_sha256: string | null;
  subject: string | null;
  not_after: string | null;
  /** Whole days until the served certificate expires (negative: expired); null when nothing was read. */
  days_left: number | null;
  problem: string | null;
};
export type CheckReport = { ok: boolean; checked_at: string; alarm_days: number; ports: PortReport[]; milliseconds: number };

/** What /health/details shows of the certificates: each problem, and the last deploy. */
export type TlsHealth = {
  last_check_at: string | null;
  problems: string[];
  last_deploy: { certificate: string; ok: boolean; at: string; detail: string } | null;
};

/** A port's problem from what it served: not served, expired, or expiring within the alarm window. */
export function judge(r: PortReading, now: number): string | null {
  if (!r.served) return r.error ?? 'nothing was read';
  const days = Math.floor((r.served.notAfter - now) / DAY);
  if (r.served.notAfter <= now) return `the certificate served expired on ${new Date(r.served.notAfter).toISOString().slice(0, 10)}`;
  if (days < EXPIRY_ALARM_DAYS) return `the certificate served expires in ${days} day${days === 1 ? '' : 's'} (${new Date(r.served.notAfter).toISOString().slice(0, 10)})`;
  return null;
}

export const rowOf = (r: PortReading, problem: string | null, now: number): PortRow => ({
  id: `${r.kind}:${r.port}`,
  kind: r.kind,
  port: r.port,
  served_sha256: r.served?.sha256 ?? null,
  subject: r.served?.subject.slice(0, 500) ?? null,
  not_after: r.served?.notAfter ?? null,
  problem: problem?.slice(0, 500) ?? null,
  checked_at: now,
});

const reportOf = (row: PortRow, now: number): PortReport => ({
  service: row.kind,
  port: row.port,
  served_sha256: row.served_sha256,
  subject: row.subject,
  not_after: row.not_after === null ? null : new Date(row.not_after).toISOString(),
  days_left: row.not_after === null ? null : Math.floor((row.not_after - now) / DAY),
  problem: row.problem,
});

/**
 * The served-expiry monitor: reads what every configured port serves (all at
 * once, each port once), whether or not mailsvc issued it, keeps the result
 * (tls_ports), and alarms — a warn line, /health/details degraded, the
 * metrics — when anything is not served or expires within 14 days.
 */
export class TlsService {
  constructor(
    private readonly repo: TlsRepository,
    private readonly prober: TlsProber,
    private readonly ports: readonly PortTarget[],
    private readonly clock: Clock,
    private readonly log: () => Pick<Logger, 'warn' | 'info'>,
  ) {}

  async check(): Promise<CheckReport> {
    const started = this.clock.now();
    const readings = await this.prober.read(this.ports);
    const now = this.clock.now();
    const rows = readings.map((r) => rowOf(r, judge(r, now), now));
    await this.repo.replacePorts(rows);
    for (const row of rows.filter((r) => r.problem)) this.log().warn({ tls: { service: row.kind, port: row.port, problem: row.problem } }, 'certificate alarm');
    const ports = rows.map((r) => reportOf(r, now));
    return { ok: ports.every((p) => p.problem === null), checked_at: new Date(now).toISOString(), alarm_days: EXPIRY_ALARM_DAYS, ports, milliseconds: now - started };
  }

  /** The ports as last read (by a check or a deploy's proof), without reading them again. */
  async lastKnown(): Promise<PortReport[]> {
    const now = this.clock.now();
    return (await this.repo.ports()).map((r) => reportOf(r, now));
  }

  /**
   * What /health/details degrades on: each port whose last reading had a
   * problem, or whose certificate has since come within the alarm window;
   * and the last deploy when its proof failed.
   */
  async health(): Promise<TlsHealth> {
    const now = this.clock.now();
    const [rows, deploy] = await Promise.all([this.repo.ports(), this.repo.lastDeploy()]);
    const problems = rows.flatMap((r) => {
      const expiring = r.not_after !== null && r.not_after - now < EXPIRY_ALARM_DAYS * DAY;
      return r.problem || expiring ? [`${r.kind}:${r.port}`] : [];
    });
    const last = rows.reduce<number | null>((m, r) => (m === null || r.checked_at > m ? r.checked_at : m), null);
    return {
      last_check_at: last === null ? null : new Date(last).toISOString(),
      problems,
      last_deploy: deploy ? { certificate: deploy.cert_name, ok: deploy.ok === 1, at: new Date(deploy.created_at).toISOString(), detail: deploy.detail } : null,
    };
  }

  /** The gauges of GET /metrics, read from the last readings at scrape time (a scrape connects to nothing). */
  registerMetrics(registry: MetricsRegistry): void {
    registry.addGauge({
      name: 'mailsvc_tls_days_to_expiry',
      help: 'Days until the certificate each port served at its last reading expires (negative: expired), per service and port',
      labelNames: ['service', 'port'],
      read: async () => {
        const now = this.clock.now();
        return (await this.repo.ports()).filter((r) => r.not_after !== null).map((r) => ({ labels: { service: r.kind, port: String(r.port) }, value: ((r.not_after ?? now) - now) / DAY }));
      },
    });
    registry.addGauge({
      name: 'mailsvc_tls_port_problem',
      help: 'Whether a port had a certificate problem at its last reading (1: not served, stale after a deploy, expired or expiring within 14 days; 0: fine)',
      labelNames: ['service', 'port'],
      read: async () => {
        const now = this.clock.now();
        return (await this.repo.ports()).map((r) => ({ labels: { service: r.kind, port: String(r.port) }, value: r.problem || (r.not_after !== null && r.not_after - now < EXPIRY_ALARM_DAYS * DAY) ? 1 : 0 }));
      },
    });
    registry.addGauge({
      name: 'mailsvc_tls_deploy_failed',
      help: 'Whether the last certificate deploy failed its proof on the wire (1) or was proven (0); absent before the first deploy',
      read: async () => {
        const d = await this.repo.lastDeploy();
        return d ? [{ value: d.ok === 1 ? 0 : 1 }] : [];
      },
    });
  }
}
