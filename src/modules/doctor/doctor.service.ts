import type { Settings } from '../../config/settings.js';
import type { HelperClient } from '../../adapters/helper-client.js';
import type { Db, DialectName } from '../../db/database.js';
import type { Schema } from '../../db/migrate.js';
import { serverTimeMs } from '../../db/server-time.js';
import type { Clock } from '../../shared/clock.js';
import type { Component } from '../report/index.js';
import { DAEMONS, daemonLine, helperCheck } from './daemon-checks.js';
import { backupFinding, dnsLines, driftFinding, verifyFinding } from './data-checks.js';
import type { DeliverabilityBrief, DriftRow, LastBackup } from './data-checks.js';
import { clockCheck, diskCheck, firstRunDue, timerCheck, timerSpecs } from './host-checks.js';
import { exitCode, report, runChecks } from './run.js';
import type { Check } from './run.js';
import type { DoctorReport } from './schema.js';
import { hookCheck, mapsCheck, policyCheck } from './socket-checks.js';
import type { Listen } from './socket-checks.js';
import { tlsCheck } from './tls-check.js';
import { srsCheck } from './srs-check.js';

/** What the doctor asks of other modules, each read when its check runs (a database that is away fails that check only). */
export type DoctorSources = {
  /** The report's component probes (database, Redis, Postfix …) and nginx by the same probe. */
  components(): Promise<Component[]>;
  /** `limits show`'s rows: each limit, its value in force and drift. */
  limits(): Promise<readonly DriftRow[]>;
  lastBackup(): Promise<LastBackup>;
  activeDomains(): Promise<string[]>;
  deliverability(): Promise<readonly DeliverabilityBrief[]>;
  /** The last certificate deploy and its proof on the wire (the tls module), null before the first. */
  lastTlsDeploy(): Promise<{ certificate: string; ok: boolean; at: string; detail: string } | null>;
};

export type DoctorDeps = { settings: Settings; db: Db; schema: Pick<Schema, 'latest' | 'version'>; dialect: DialectName; helper: HelperClient; clock: Clock; sources: DoctorSources };

/** `mailsvc doctor` and GET /admin/doctor: every check at once, each within MAILSVC_DOCTOR_TIMEOUT_MS (docs/doctor.md). */
export class DoctorService {
  constructor(private readonly d: DoctorDeps) {}

  checks(): Check[] {
    const { settings, sources, clock } = this.d;
    const ms = settings.doctor.timeoutMs;
    const now = () => clock.now();
    const mail = settings.mail;
    const hooks: Listen[] = [...(mail.authHookSocket ? [{ path: mail.authHookSocket }] : []), ...(mail.authHookListen ? [mail.authHookListen] : [])];
    const listen = (l: typeof mail.policyListen): Listen | null => (l ? ('path' in l ? { path: l.path } : l) : null);
    const policy = listen(mail.policyListen);
    const maps = listen(mail.mapsListen);
    const paths = [
      { id: 'disk.data', name: 'disk space of the data directory', path: settings.dataDir, setting: 'MAILSVC_DATA_DIR' },
      { id: 'disk.mail-storage', name: 'disk space of the mail storage', path: settings.stats.mailStorage, setting: 'MAILSVC_MAIL_STORAGE' },
    ];
    const timers = timerSpecs({ enableSrs: settings.dns.enableSrs, enableDeliverability: settings.dns.enableDeliverabilityTimer, enableAutoUpdates: settings.updates.autoUpdates });
    return [
      {
        group: 'daemons',
        lines: DAEMONS.map((x) => ({ id: `daemon.${x.id}`, name: x.name })),
        run: async () => {
          const found = await sources.components();
          return DAEMONS.map((x) => daemonLine(x, found.find((c) => c.name === x.id)));
        },
      },
      { id: 'daemon.helper', name: 'the privileged helper', run: () => helperCheck(settings.helper.endpoint, this.d.helper) },
      {
        id: 'database.schema',
        name: 'database schema',
        run: async () => {
          const v = await this.d.schema.version(this.d.db);
          return v === this.d.schema.latest ? { status: 'ok', detail: `schema ${v}, the latest`, fix: null } : { status: 'fail', detail: `schema ${v ?? 'none'}, this mailsvc needs ${this.d.schema.latest}`, fix: 'run mailsvc db migrate (or start the service once)' };
        },
      },
      { id: 'config.drift', name: 'daemons configured as mailsvc renders them', run: async () => driftFinding(await sources.limits()) },
      ...timers.map((t): Check => ({ id: t.id, name: t.name, run: () => timerCheck(t, ms) })),
      {
        id: 'backup.last',
        name: 'last backup',
        run: async () => {
          const last = await sources.lastBackup();
          const backupTimer = timers.find((t) => t.id === 'timer.backup');
          return backupFinding(last, now(), last || !backupTimer ? null : await firstRunDue(backupTimer, ms, now()));
        },
      },
      { id: 'backup.verify', name: 'last backup verify', run: async () => verifyFinding(await sources.lastBackup(), now()) },
      {
        group: 'dns',
        lines: [{ id: 'dns', name: 'DNS records published' }],
        run: async () => {
          const [domains, reports] = await Promise.all([sources.activeDomains(), sources.deliverability()]);
          return dnsLines(domains, reports, now());
        },
      },
      ...[...new Map(paths.map((p) => [p.path, p])).values()].map((p): Check => ({ id: p.id, name: p.name, run: () => diskCheck(p.path, p.setting, settings.stats.reportDiskPercent) })),
      ...settings.doctor.tlsPorts.map((p): Check => ({
        id: `tls.${p.kind}`,
        name: `certificate on port ${p.port} (${p.kind})`,
        run: () => tlsCheck(p, settings.doctor.tlsHost, settings.doctor.tlsName, now(), ms),
      })),
      {
        id: 'tls.deploy',
        name: 'last certificate deploy',
        run: async () => {
          const d = await sources.lastTlsDeploy();
          if (!d) return { status: 'ok', detail: 'no certificate deployed by mailsvc yet', fix: null };
          if (d.ok) return { status: 'ok', detail: `${d.certificate} deployed and proven on every port at ${d.at}`, fix: null };
          return { status: 'fail', detail: `${d.certificate} at ${d.at}: ${d.detail}`, fix: 'see mailsvc tls status, fix the daemon that kept the old certificate, then mailsvc tls deploy again' };
        },
      },
      { id: 'socket.policy', name: 'Postfix policy service', run: () => policyCheck(policy, ms) },
      { id: 'socket.maps', name: "Postfix's lookup tables", run: () => mapsCheck(maps, ms) },
      { id: 'socket.auth-hook', name: 'Dovecot auth hook', run: () => hookCheck(hooks, ms) },
      { id: 'srs.domains', name: "postsrsd's excluded domains", run: () => srsCheck(settings.dns.enableSrs, settings.dns.postsrsdForward, () => sources.activeDomains(), ms) },
      { id: 'clock', name: 'clock against the database', run: () => clockCheck(now, () => serverTimeMs(this.d.db, this.d.dialect)) },
    ];
  }

  async run(): Promise<DoctorReport> {
    const lines = await runChecks(this.checks(), this.d.settings.doctor.timeoutMs);
    return report(lines, this.d.clock.now());
  }
}

export { exitCode };
