import type { FastifyInstance } from 'fastify';
import type { Infra } from '../../infra/index.js';
import type { RouteKit } from '../route-types.js';
import { AppError } from '../../shared/errors.js';
import { JobFailed } from '../jobs/index.js';
import type { Job, JobContext, JobRunner, JobUpdate } from '../jobs/index.js';
import { CertRepository } from './cert.repository.js';
import { CertService } from './cert.service.js';
import type { CertProgress } from './cert.service.js';
import type { IssueJobInput, RenewJobInput } from './schema.js';
import { LocalFileDeployer } from './deployer.js';
import type { CertificateDeployer, TlsService } from './deployer.js';
import type { AcmeTxtPublisher } from './challenges.js';
import type { DaneKeys } from '../dns/index.js';

export type { CertService } from './cert.service.js';
export type { CertificateDeployer, DeployProof, PortProof, TlsService } from './deployer.js';
export { LocalFileDeployer, proveOnTheWire } from './deployer.js';
export type { AcmeTxtPublisher } from './challenges.js';
export type { CertView, IssueJobInput, RenewJobInput, RenewOutcome } from './schema.js';

export type CertsDeps = {
  activeDomains: () => Promise<string[]>;
  /** A deployer that wins over MAILSVC_CERTS_DEPLOY (a test's). */
  deployer?: CertificateDeployer | undefined;
  /** The tls module's deployer (through the root helper): used when MAILSVC_CERTS_DEPLOY is `helper` (the default). */
  helperDeployer?: CertificateDeployer | undefined;
  cloudflare?: AcmeTxtPublisher | undefined;
  /** The dns module's DANE keys: a certificate of the mail host with a new key is deployed only after its TLSA record (docs/certs.md "DANE"). */
  dane?: { keys(mailHost: string): DaneKeys } | undefined;
  progress?: (line: string) => void;
  /** The jobs module's runner: issue and renew run as jobs (kinds cert-issue, cert-renew). */
  runner?: JobRunner | undefined;
};

export const CERT_ISSUE_JOB = 'cert-issue';
export const CERT_RENEW_JOB = 'cert-renew';

/** A failed certificate job: the error's detail as its message, its code (and the CA's Retry-After) in its result. */
function jobFailure(err: unknown): JobFailed {
  const e = err instanceof AppError ? err : new AppError('internal', err instanceof Error ? err.message : String(err));
  return new JobFailed(e.detail, { error: { code: e.code, ...(e.extra.retryAfter !== undefined ? { retry_after: e.extra.retryAfter } : {}) } });
}

const DEPLOYABLE: readonly TlsService[] = ['smtp', 'submission', 'smtps', 'imaps', 'pop3s', 'https'];

/** MAILSVC_CERTS_DEPLOY: `helper` needs the tls module's deployer; `files` is the built-in one. */
function chooseDeployer(how: 'helper' | 'files', helper: CertificateDeployer | undefined, files: () => CertificateDeployer): CertificateDeployer {
  if (how === 'files') return files();
  if (helper) return helper;
  // Only reached when the module is built without the tls module (a program of its own): said when a certificate is deployed.
  return {
    deployAndProve: () => Promise.reject(new Error('MAILSVC_CERTS_DEPLOY is helper but the tls module (the helper\'s deployer) is not loaded; set MAILSVC_CERTS_DEPLOY=files to write the files under MAILSVC_CERTS_DIR instead')),
  };
}

/** ACME certificates for the mail host, the panel and the per-domain names (docs/certs.md). */
export function createCertsModule(infra: Pick<Infra, 'db' | 'clock' | 'settings' | 'box' | 'instruments'>, deps: CertsDeps) {
  const { settings } = infra;
  // IMAP's and POP3's STARTTLS ports (imap, pop3) are proven with imaps and pop3s: a deploy names only these.
  const ports = settings.doctor.tlsPorts.filter((p): p is { kind: TlsService; port: number } => (DEPLOYABLE as readonly string[]).includes(p.kind));
  const deployer = deps.deployer ?? chooseDeployer(settings.certs.deploy, deps.helperDeployer, () => new LocalFileDeployer({ dir: settings.certs.certsDir, host: settings.doctor.tlsHost, ports, timeoutMs: settings.doctor.timeoutMs }));
  const repo = new CertRepository(infra.db);
  const service = new CertService({
    repo,
    box: () => infra.box,
    clock: infra.clock,
    settings: settings.certs,
    dnsCheck: settings.dns.authoritative.length ? settings.dns.authoritative : settings.dns.resolvers,
    activeDomains: deps.activeDomains,
    deployer,
    services: [...new Set(ports.map((p) => p.kind))],
    cloudflare: deps.cloudflare,
    dane: deps.dane,
    ...(deps.progress ? { progress: deps.progress } : {}),
    lockDir: settings.dataDir,
  });
  const runner = deps.runner;
  const toJob = (ctx: JobContext): CertProgress => (f, line) => void ctx.progress(f, line).catch(() => undefined);
  const asJob = <T>(ctx: JobContext, work: () => Promise<T>): Promise<T> =>
    service.withProgress(toJob(ctx), work).catch((err: unknown) => {
      throw jobFailure(err);
    });
  runner?.register<IssueJobInput>(CERT_ISSUE_JOB, (input, ctx) => asJob(ctx, () => service.issue(input.name, { names: input.names, newKey: input.new_key })));
  runner?.register<RenewJobInput>(CERT_RENEW_JOB, (input, ctx) => asJob(ctx, () => service.renew({ name: input.name, force: input.force })));
  const jobsOf = (): JobRunner => {
    if (!runner) throw new Error('the certs module was built without the jobs module');
    return runner;
  };
  /**
   * Issue and renew as jobs: bad input (400/404/422) and another operation on
   * the certificate (409) are refused before the job is queued; the job takes
   * the certificate's lock when it runs.
   */
  const jobs = {
    startIssue: async (input: IssueJobInput): Promise<string> => {
      await service.checkIssue(input.name, { names: input.names });
      return jobsOf().start(CERT_ISSUE_JOB, input);
    },
    startRenew: async (input: RenewJobInput): Promise<string> => {
      await service.checkRenew({ name: input.name });
      return jobsOf().start(CERT_RENEW_JOB, input);
    },
    /** The CLI: the same job in the foreground, its progress to `onUpdate`. */
    runIssueHere: async (input: IssueJobInput, onUpdate: (u: JobUpdate) => void, signal?: AbortSignal): Promise<Job> => {
      await service.checkIssue(input.name, { names: input.names });
      return jobsOf().runHere(CERT_ISSUE_JOB, input, onUpdate, signal);
    },
    runRenewHere: async (input: RenewJobInput, onUpdate: (u: JobUpdate) => void, signal?: AbortSignal): Promise<Job> => {
      await service.checkRenew({ name: input.name });
      return jobsOf().runHere(CERT_RENEW_JOB, input, onUpdate, signal);
    },
  };
  infra.instruments.addGauge({
    name: 'mailsvc_certificate_days_to_expiry',
    help: 'Days until each certificate mailsvc issued expires (negative: expired)',
    labelNames: ['name'],
    read: async () => (await repo.list()).filter((r) => r.not_after !== null && r.revoked_at === null).map((r) => ({ labels: { name: r.name }, value: Math.floor(((r.not_after as number) - infra.clock.now()) / 86_400_000) })),
  });
  infra.instruments.addGauge({
    name: 'mailsvc_certificate_renewal_failures',
    help: 'Failed issuance or renewal attempts in a row per certificate (0 after a proven one)',
    labelNames: ['name'],
    read: async () => (await repo.list()).map((r) => ({ labels: { name: r.name }, value: r.failures })),
  });
  return {
    service,
    jobs,
    routes: async (app: FastifyInstance, kit: RouteKit) => (await import('./routes.js')).certRoutes(app, service, jobs, kit),
  };
}
export type CertsModule = ReturnType<typeof createCertsModule>;
