import type { Logger } from 'pino';
import { HelperError } from '../../adapters/helper-client.js';
import type { HelperClient } from '../../adapters/helper-client.js';
import { AppError } from '../../shared/errors.js';
import type { Clock } from '../../shared/clock.js';
import { bundleFromPem, parseCertName, parseTlsBundle } from '../../shared/tls-bundle.js';
import { isRecord } from '../../shared/json-value.js';
import { DAEMON_OF } from './prober.js';
import type { PortReading, PortTarget, TlsProber, TlsPortKind } from './prober.js';
import { rowOf } from './tls.service.js';
import type { TlsRepository } from './tls.repository.js';

/** The services a deploy names; IMAP's and POP3's STARTTLS ports (143, 110), when configured, go with imaps and pop3s. */
export const DEPLOY_SERVICES = ['smtp', 'submission', 'smtps', 'imaps', 'pop3s', 'https'] as const;
export type DeployService = (typeof DEPLOY_SERVICES)[number];

export type DeployInput = { certName: string; chainPem: string; keyPem: string; services: DeployService[] };
export type ProvenPort = { service: string; port: number; servedSha256: string | null; matches: boolean; detail?: string };
export type DeployOutcome = { ok: boolean; ports: ProvenPort[] };
/** A deploy as the CLI prints it: the outcome, the certificate's SHA-256 and a sentence. */
export type DeployReport = DeployOutcome & { certificate: string; sha256: string; detail: string };

/** What other modules (certs: issue and renew) call to put a certificate in service and prove it. */
export interface CertificateDeployer {
  deployAndProve(input: DeployInput): Promise<DeployOutcome>;
}

type Daemon = 'postfix' | 'dovecot' | 'nginx';
type HelperDaemonReport = { daemon: Daemon; status: 'changed' | 'unchanged' | 'skipped'; reloaded: boolean; detail: string };

export type DeployerOptions = {
  /** How long a port may keep serving the old certificate after a reload or restart before it counts as stale (reloads finish asynchronously). */
  settleMs: number;
  /** How long to wait for a restarted daemon's port to answer again. */
  restartWaitMs: number;
  pollMs: number;
  /**
   * Once every port serves what is wanted, how long after that the ports are read again to confirm it: a reload
   * leaves the daemon's old workers accepting for a moment next to the new ones (nginx starts the new workers,
   * waits, then tells the old ones to stop), so one good reading may be followed by the old certificate.
   */
  steadyMs: number;
};
export const DEFAULT_DEPLOYER_OPTIONS: DeployerOptions = { settleMs: 5000, restartWaitMs: 30_000, pollMs: 200, steadyMs: 1000 };

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** The helper's JSON answer (an action the helper does itself answers JSON on stdout). */
function helperJson(stdout: string, what: string): Record<string, unknown> {
  try {
    const v = JSON.parse(stdout) as unknown;
    if (isRecord(v)) return v;
  } catch {
    // fall through
  }
  throw new AppError('upstream', `${what}: the helper answered something unexpected`);
}

/**
 * Deploy, then prove on the wire (docs/tls.md): the helper installs the
 * chain and key and points the daemons at them (reloading each); every port
 * that should serve it is read until it serves the new leaf (within
 * `settleMs`); a daemon whose port still serves the old one is restarted
 * once through the helper and read again; a port still stale is a failure:
 * the helper rolls the daemons back to the previous certificate, the
 * failure is kept (/health/details degraded, the metrics) and `ok` is false.
 */
export class Deployer implements CertificateDeployer {
  constructor(
    private readonly helper: HelperClient,
    private readonly prober: Pick<TlsProber, 'read'>,
    private readonly configured: readonly PortTarget[],
    private readonly repo: Pick<TlsRepository, 'upsertPorts' | 'addDeploy'>,
    private readonly clock: Clock,
    private readonly log: () => Pick<Logger, 'warn' | 'info'>,
    private readonly opts: DeployerOptions = DEFAULT_DEPLOYER_OPTIONS,
  ) {}

  /** The configured ports a deploy to `services` must prove. */
  portsFor(services: readonly DeployService[]): PortTarget[] {
    const wanted = new Set<TlsPortKind>(services);
    if (wanted.has('imaps')) wanted.add('imap');
    if (wanted.has('pop3s')) wanted.add('pop3');
    return this.configured.filter((p) => wanted.has(p.kind));
  }

  private checkInput(input: DeployInput): { wire: string; sha256: string; daemons: Daemon[] } {
    try {
      parseCertName(input.certName);
    } catch (err) {
      throw new AppError('validation', (err as Error).message);
    }
    const services = [...new Set(input.services)];
    if (services.length === 0 || services.some((s) => !(DEPLOY_SERVICES as readonly string[]).includes(s))) {
      throw new AppError('validation', `services must be some of ${DEPLOY_SERVICES.join(', ')}`);
    }
    let sha256: string;
    let wire: string;
    try {
      const bundle = bundleFromPem(input.chainPem, input.keyPem);
      sha256 = parseTlsBundle(bundle, this.clock.now()).sha256;
      wire = JSON.stringify(bundle);
    } catch (err) {
      throw new AppError('validation', `the certificate cannot be deployed: ${(err as Error).message}`);
    }
    const daemons = (['postfix', 'dovecot', 'nginx'] as const).filter((d) => services.some((s) => DAEMON_OF[s] === d));
    return { wire, sha256, daemons };
  }

  /**
   * Reads `targets` until each serves `sha256` on two readings `steadyMs`
   * apart, or `ms` passed, or every port has answered (served some
   * certificate) for `settleMs` without all of them serving it: a port that
   * does not answer (a daemon restarting) is waited for, a port that answers
   * with the old certificate is given `settleMs`.
   */
  private async readUntil(targets: readonly PortTarget[], sha256: string | ((served: string | undefined) => boolean), ms: number): Promise<PortReading[]> {
    const good = typeof sha256 === 'string' ? (served: string | undefined) => served === sha256 : sha256;
    const end = this.clock.now() + ms;
    let answeredSince: number | null = null;
    let readings = await this.prober.read(targets);
    for (;;) {
      let now = this.clock.now();
      if (readings.every((r) => good(r.served?.sha256))) {
        // Every port serves it: read them all again a moment later, so a daemon's old worker still accepting is not taken for the new one.
        await sleep(this.opts.steadyMs);
        readings = await this.prober.read(targets);
        if (readings.every((r) => good(r.served?.sha256))) return readings;
        now = this.clock.now();
      }
      if (now >= end) return readings;
      if (readings.every((r) => r.served)) answeredSince ??= now;
      else answeredSince = null;
      if (answeredSince !== null && now - answeredSince >= this.opts.settleMs) return readings;
      await sleep(this.opts.pollMs);
      const again = await this.prober.read(readings.filter((r) => !good(r.served?.sha256)));
      readings = readings.map((r) => again.find((a) => a.kind === r.kind && a.port === r.port) ?? r);
    }
  }

  async deployAndProve(input: DeployInput): Promise<DeployOutcome> {
    const r = await this.deploy(input);
    return { ok: r.ok, ports: r.ports };
  }

  async deploy(input: DeployInput): Promise<DeployReport> {
    const { wire, sha256, daemons } = this.checkInput(input);
    const targets = this.portsFor(input.services);
    const name = input.certName;
    let deployed: Record<string, unknown>;
    try {
      deployed = helperJson((await this.helper.run('tls-deploy', [name, daemons.join(','), wire])).stdout, 'tls-deploy');
    } catch (err) {
      // The helper refused the input (it checks what the service checked) or is not there: said as it is, nothing recorded.
      if (err instanceof HelperError && (err.kind === 'refused' || err.kind === 'unreachable')) throw err;
      deployed = { ok: false, detail: err instanceof Error ? err.message : String(err) };
    }
    if (deployed.ok !== true) {
      const detail = `the helper did not deploy ${name}: ${typeof deployed.detail === 'string' ? deployed.detail : 'no reason given'}; the previous certificate still serves`;
      return this.finish(name, sha256, false, detail, targets.map((t) => ({ service: t.kind, port: t.port, servedSha256: null, matches: false, detail: 'not deployed' })));
    }
    const reports = (Array.isArray(deployed.daemons) ? deployed.daemons : []) as HelperDaemonReport[];
    const skipped = new Map(reports.filter((r) => r.status === 'skipped').map((r) => [r.daemon, r.detail]));
    const proving = targets.filter((t) => !skipped.has(DAEMON_OF[t.kind]));

    let readings = await this.readUntil(proving, sha256, this.opts.restartWaitMs);
    const restarted = new Set<Daemon>();
    const stale = (rs: readonly PortReading[]) => rs.filter((r) => r.served?.sha256 !== sha256);
    for (const daemon of [...new Set(stale(readings).map((r) => DAEMON_OF[r.kind]))]) {
      this.log().warn({ tls: { certificate: name, daemon, ports: stale(readings).filter((r) => DAEMON_OF[r.kind] === daemon).map((r) => r.port) } }, 'certificate not served after reload: restarting the daemon once');
      try {
        await this.helper.run('tls-restart', [daemon]);
      } catch (err) {
        // A restart that failed leaves the port as it is: read again below, it stays stale and the deploy is rolled back.
        this.log().warn({ tls: { certificate: name, daemon, error: err instanceof Error ? err.message : String(err) } }, 'daemon restart failed');
      }
      restarted.add(daemon);
    }
    if (restarted.size > 0) {
      const again = await this.readUntil(readings.filter((r) => restarted.has(DAEMON_OF[r.kind])), sha256, this.opts.restartWaitMs);
      readings = readings.map((r) => again.find((a) => a.kind === r.kind && a.port === r.port) ?? r);
    }
    const ports: ProvenPort[] = targets.map((t) => {
      const why = skipped.get(DAEMON_OF[t.kind]);
      if (why !== undefined) return { service: t.kind, port: t.port, servedSha256: null, matches: false, detail: `skipped: ${why}` };
      const r = readings.find((x) => x.kind === t.kind && x.port === t.port);
      const matches = r?.served?.sha256 === sha256;
      const how = restarted.has(DAEMON_OF[t.kind]) ? `after a restart of ${DAEMON_OF[t.kind]}` : 'after a reload';
      const detail = matches ? `serves the new certificate ${how}` : r?.served ? `still serves the old certificate ${how}` : `${r?.error ?? 'not read'} ${how}`;
      return { service: t.kind, port: t.port, servedSha256: r?.served?.sha256 ?? null, matches, detail };
    });
    const now = this.clock.now();
    await this.repo.upsertPorts(readings.map((r) => rowOf(r, r.served?.sha256 === sha256 ? null : `not the certificate deployed (${name}): ${r.served ? 'an old one is served' : (r.error ?? 'nothing read')}`, now)));
    const failed = ports.filter((p) => !p.matches && !p.detail?.startsWith('skipped'));
    if (failed.length === 0) {
      return this.finish(name, sha256, true, `${name} is served on ${ports.filter((p) => p.matches).map((p) => `${p.service}:${p.port}`).join(', ') || 'no port'}`, ports);
    }
    const rollback = await this.helper.run('tls-rollback', [name]).then(
      (r) => helperJson(r.stdout, 'tls-rollback'),
      (err: unknown) => ({ ok: false, detail: err instanceof Error ? err.message : String(err) }) as Record<string, unknown>,
    );
    const back = rollback.ok === true ? await this.proveRollback(proving, sha256, typeof rollback.sha256 === 'string' ? rollback.sha256 : null) : `the rollback failed too: ${typeof rollback.detail === 'string' ? rollback.detail : 'no reason given'}`;
    const detail = `${name} is not served on ${failed.map((p) => `${p.service}:${p.port}`).join(', ')} even after a restart; ${back}`;
    return this.finish(name, sha256, false, detail, ports);
  }

  /**
   * After a failed deploy's rollback: reads the ports until they serve the
   * previous certificate again (`previous`, or when the previous files were
   * the administrator's own, anything but the certificate that failed), so the
   * report says what is on the wire, not only what the helper changed.
   */
  private async proveRollback(targets: readonly PortTarget[], failed: string, previous: string | null): Promise<string> {
    const back = (served: string | undefined): boolean => (previous === null ? served !== undefined && served !== failed : served === previous);
    const still = (await this.readUntil(targets, back, this.opts.restartWaitMs)).filter((r) => !back(r.served?.sha256));
    if (still.length === 0) return 'the daemons were pointed back at the previous certificate, which every port serves again';
    this.log().warn({ tls: { certificate: failed, ports: still.map((r) => `${r.kind}:${r.port}`) } }, 'previous certificate not served after the rollback');
    return `the daemons were pointed back at the previous certificate, but ${still.map((r) => `${r.kind}:${r.port}`).join(', ')} ${still.length === 1 ? 'does' : 'do'} not serve it yet: run mailsvc tls check`;
  }

  /** `mailsvc tls rollback`: the daemons the last deploy of `name` changed pointed back (the helper's tls-rollback). */
  async rollback(name: string): Promise<{ certificate: string; sha256: string | null; daemons: HelperDaemonReport[] }> {
    try {
      parseCertName(name);
    } catch (err) {
      throw new AppError('validation', (err as Error).message);
    }
    const r = helperJson((await this.helper.run('tls-rollback', [name])).stdout, 'tls-rollback');
    if (r.ok !== true) throw new AppError(r.status === 'nothing' ? 'not_found' : 'upstream', typeof r.detail === 'string' ? r.detail : 'the rollback failed');
    return { certificate: name, sha256: typeof r.sha256 === 'string' ? r.sha256 : null, daemons: (Array.isArray(r.daemons) ? r.daemons : []) as HelperDaemonReport[] };
  }

  private async finish(name: string, sha256: string, ok: boolean, detail: string, ports: ProvenPort[]): Promise<DeployReport> {
    await this.repo.addDeploy({ cert_name: name, sha256, ok: ok ? 1 : 0, detail: detail.slice(0, 1000), ports_json: JSON.stringify(ports), created_at: this.clock.now() });
    if (ok) this.log().info({ tls: { certificate: name, sha256 } }, 'certificate deployed and proven');
    else this.log().warn({ tls: { certificate: name, sha256, detail } }, 'certificate deploy failed');
    return { ok, ports, certificate: name, sha256, detail };
  }
}
