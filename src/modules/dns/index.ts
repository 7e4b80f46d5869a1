import type { FastifyInstance } from 'fastify';
import type { Infra } from '../../infra/index.js';
import type { DomainLookup } from '../domains/index.js';
import type { RouteKit } from '../route-types.js';
import { DkimRepository } from './dkim.repository.js';
import { DkimService } from './dkim.service.js';
import { helperSigning } from './dkim-signing.js';
import type { SigningKey, SigningOutcome } from './dkim-signing.js';
import { DnsPlanService } from './plan.service.js';
import { join } from 'node:path';
import { MailServicesError, readMailServices } from '../../adapters/mail-services.js';
import { AppError } from '../../shared/errors.js';
import type { JobRunner } from '../jobs/index.js';
import { DeliverabilityService } from './deliverability.service.js';
import { CloudflareSyncService } from './cloudflare-sync.service.js';
import { RotationService } from './rotation.service.js';
import { SrsService } from './srs.service.js';
import { DaneService, servedSpkiOverSmtp } from './dane.service.js';
import type { DeliverabilityReport } from './schema.js';

export { dnsCommands } from './commands.js';
export type { DkimService } from './dkim.service.js';
export type { RotationService, RotationStatus } from './rotation.service.js';
export type { DaneService, DaneKeys, DaneRolloverState, DaneState } from './dane.service.js';
/** The SPKI SHA-256 (hex) of a PEM certificate or key: what `DaneKeys` takes. */
export { spkiSha256, spkiSha256OfDer } from './dane-spki.js';
export type { DkimResult, DkimKeyView, DnsPlan, DeliverabilityReport } from './schema.js';
/** Each existing domain's newest deliverability report in brief (GET /dns/deliverability; `mailsvc doctor`). */
export { latestPerDomain } from './status-routes.js';
export { retireDomainKeys } from './domain-deleting.js';

/** The input of a `deliverability` job. */
export type DeliverabilityJobInput = { domain: string; mail_host: string; public_ip?: string | undefined; save?: boolean | undefined };

export type DnsDeps = {
  domains: DomainLookup;
  /** The limit dkim-key-bits, read per call. */
  keyBits: () => number;
  /** Replaces the Rspamd render through the helper (tests that watch which keys sign when). */
  applySigning?: (keys: readonly SigningKey[]) => Promise<SigningOutcome>;
  /** Replaces the helper's `dkim-key-remove` (tests that watch which key files go when). */
  removeKeyFiles?: (domain: string, selectors: readonly string[]) => Promise<void>;
  /** The limits dkim-rotation-days and dkim-rotation-grace-days, read per call (default: the built-in 180 and 7). */
  rotationDays?: () => number;
  graceDays?: () => number;
  /** The active domains (for postsrsd's excluded domains). */
  activeDomains?: () => Promise<string[]>;
  /** The job runner: `deliverability` jobs are registered on it. */
  jobs?: JobRunner;
  /** Publishes a mail host's TLSA records (default: nothing does; the administrator publishes them from the plan). */
  publishTlsa?: (mailHost: string) => Promise<boolean>;
  /** Extra trusted CAs for the deliverability HTTPS and STARTTLS checks (tests: their private CA). */
  ca?: readonly string[];
  /** Postsrsd's excluded domains could not follow a domain change (the audit log keeps it). */
  onSrsFollowFailed?: (failure: SrsFollowFailure) => Promise<unknown>;
};

/** A domain change postsrsd's excluded domains did not follow, and why (a fixed sentence of the SRS service). */
export type SrsFollowFailure = { action: string; domain: string; detail: string };

/** DKIM keys and Rspamd signing, the DNS plan (docs/dns.md). */
export function createDnsModule(infra: Pick<Infra, 'db' | 'clock' | 'settings' | 'helper' | 'box' | 'outbound' | 'log'>, deps: DnsDeps) {
  const { settings } = infra;
  const signing = helperSigning(infra.helper);
  const dkim = new DkimService({
    repo: new DkimRepository(infra.db),
    domains: deps.domains,
    box: () => infra.box,
    clock: infra.clock,
    keyBits: deps.keyBits,
    ed25519ByDefault: settings.dns.dkimEd25519,
    applySigning: deps.applySigning ?? signing.applySigning,
    removeKeyFiles: deps.removeKeyFiles ?? signing.removeKeyFiles,
  });
  // The SRV records name the ports the daemons' configuration files serve (docs/mail-clients.md), read per plan.
  const services = () => readMailServices({ postfixMasterCf: settings.autoconfig.postfixMasterCf, dovecotListeners: settings.autoconfig.dovecotListeners }).catch((err: unknown) => {
    throw err instanceof MailServicesError ? new AppError('unavailable', `The DNS plan's SRV records come from the mail daemons' configuration: ${err.message}`) : err;
  });
  const dane: DaneService = new DaneService({
    db: infra.db,
    clock: infra.clock,
    resolvers: settings.dns.resolvers,
    authoritative: settings.dns.authoritative,
    // The Cloudflare sync, when the zone holding the mail host has it on; else the administrator publishes the plan's records.
    publish: deps.publishTlsa ?? ((host: string): Promise<boolean> => cloudflare.syncTlsaIfEnabled(host)),
    servedSpki: servedSpkiOverSmtp({ resolvers: settings.dns.resolvers, port: settings.dns.deliverabilitySmtpPort, ca: deps.ca }),
  });
  const plan = new DnsPlanService(dkim, deps.domains, settings.dns.srsDomain, services, dane);
  const deliverability = new DeliverabilityService({
    db: infra.db,
    clock: infra.clock,
    dns: settings.dns,
    policy: infra.outbound,
    domains: deps.domains,
    dkim,
    reportDir: join(settings.dataDir, 'deliverability'),
    ca: deps.ca,
  });
  const cloudflare = new CloudflareSyncService({
    db: infra.db,
    box: () => infra.box,
    clock: infra.clock,
    domains: deps.domains,
    dkim,
    apiUrl: settings.dns.cloudflareApiUrl,
    policy: infra.outbound,
    ca: deps.ca,
    tlsa: (host: string) => dane.records(host),
  });
  const rotation = new RotationService({
    db: infra.db,
    clock: infra.clock,
    dkim,
    domains: deps.domains,
    resolvers: settings.dns.resolvers,
    authoritative: settings.dns.authoritative,
    rotationDays: deps.rotationDays ?? (() => 180),
    graceDays: deps.graceDays ?? (() => 7),
    publish: (domain) => cloudflare.syncIfEnabled(domain),
    ed25519: settings.dns.dkimEd25519,
  });
  const srs = new SrsService({
    activeDomains: deps.activeDomains ?? (async () => []),
    forward: settings.dns.postsrsdForward,
    helper: infra.helper,
  });
  const jobs = deps.jobs;
  jobs?.register<DeliverabilityJobInput>('deliverability', (input, ctx): Promise<DeliverabilityReport> => {
    const progress = (f: number, m: string): void => void ctx.progress(f, m);
    return input.save === false
      ? deliverability.check(input.domain, input.mail_host, input.public_ip, progress)
      : deliverability.report(input.domain, input.mail_host, input.public_ip, progress);
  });
  return {
    dkim,
    plan,
    /** Where nginx reaches mailsvc's API (the live bundle's autoconfiguration server block). */
    apiUpstream: `http://${settings.apiHost.includes(':') ? `[${settings.apiHost}]` : settings.apiHost}:${settings.apiPort}`,
    deliverability,
    cloudflare,
    rotation,
    dane,
    srs,
    srsEnabled: settings.dns.enableSrs,
    /**
     * A domain was added, deleted, switched on or off: with MAILSVC_ENABLE_SRS,
     * postsrsd's excluded domains follow at once (the hourly
     * mailsvc-srs-sync timer stays as the safety net). Never throws: a
     * failure is logged and audited, and the doctor's `srs.domains` shows
     * the drift until a sync succeeds.
     */
    srsFollow: async (change: { action: string; domain: string }): Promise<void> => {
      if (!settings.dns.enableSrs) return;
      try {
        await srs.sync();
      } catch (err) {
        const detail = err instanceof AppError ? err.detail : err instanceof Error ? err.message : String(err);
        infra.log.warn({ srs: { ...change, error: detail } }, "postsrsd's excluded domains did not follow the domain change: mailsvc-srs-sync.timer tries again within the hour, or run mailsvc dns sync-srs");
        await deps.onSrsFollowFailed?.({ ...change, detail }).catch(() => undefined);
      }
    },
    jobs,
    routes: async (app: FastifyInstance, kit: RouteKit) => {
      const { dnsRoutes } = await import('./routes.js');
      const { dnsSyncRoutes } = await import('./sync-routes.js');
      const { dnsStatusRoutes } = await import('./status-routes.js');
      dnsRoutes(app, { dkim, plan, deliverability, jobs, rotation }, kit);
      dnsSyncRoutes(app, cloudflare, kit);
      dnsStatusRoutes(app, infra.db, kit);
      (await import('./dane-routes.js')).daneRoutes(app, dane, kit);
    },
  };
}
export type DnsModule = ReturnType<typeof createDnsModule>;
