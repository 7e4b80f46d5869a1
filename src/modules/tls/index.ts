import type { Infra } from '../../infra/index.js';
import { Deployer, DEFAULT_DEPLOYER_OPTIONS } from './deployer.js';
import type { DeployerOptions } from './deployer.js';
import { TlsProber } from './prober.js';
import { TlsRepository } from './tls.repository.js';
import { TlsService } from './tls.service.js';

export type { CertificateDeployer, DeployInput, DeployOutcome, DeployReport, DeployService, ProvenPort } from './deployer.js';
export { DEPLOY_SERVICES } from './deployer.js';
export { TlsProber, DAEMON_OF } from './prober.js';
export type { PortReading, PortTarget, ProberOptions, ServedCertificate, TlsPortKind } from './prober.js';
export type { CheckReport, PortReport, TlsHealth, TlsService } from './tls.service.js';
export { EXPIRY_ALARM_DAYS } from './tls.service.js';

/**
 * Certificates in service (docs/tls.md): the deployer (the helper installs,
 * mailsvc proves on the wire, restarts once, rolls back), the served-expiry
 * monitor, and the prober both use. The ports, the host they are read at and
 * the name asked for are MAILSVC_DOCTOR_TLS_PORTS, _HOST and _NAME; the
 * proof's settle window is MAILSVC_TLS_SETTLE_MS.
 */
export function createTlsModule(infra: Pick<Infra, 'db' | 'settings' | 'clock' | 'helper' | 'log' | 'instruments'>, opts: { deployer?: Partial<DeployerOptions> } = {}) {
  const d = infra.settings.doctor;
  const prober = new TlsProber({ host: d.tlsHost, servername: d.tlsName, timeoutMs: d.timeoutMs });
  const repo = new TlsRepository(infra.db);
  const log = () => infra.log;
  const service = new TlsService(repo, prober, d.tlsPorts, infra.clock, log);
  const deployer = new Deployer(infra.helper, prober, d.tlsPorts, repo, infra.clock, log, { ...DEFAULT_DEPLOYER_OPTIONS, settleMs: d.tlsSettleMs, ...opts.deployer });
  service.registerMetrics(infra.instruments);
  return { service, deployer, prober };
}
export type TlsModule = ReturnType<typeof createTlsModule>;
