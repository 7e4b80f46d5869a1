import { AsyncLocalStorage } from 'node:async_hooks';
import { createHash } from 'node:crypto';
import { mkdirSync, readFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import type { CertsSettings } from '../../config/certs-settings.js';
import type { DnsServer } from '../../config/dns-settings.js';
import { sealContext } from '../../db/sealed-columns.js';
import type { Clock } from '../../shared/clock.js';
import { AppError } from '../../shared/errors.js';
import { checkLock, takeLock } from '../../shared/file-lock.js';
import type { LockHolder } from '../../shared/file-lock.js';
import type { SecretBox } from '../../shared/secret-box.js';
import { AcmeRateLimited, acmeClient, acmeCrypto, ariCertId, certFacts, directoryOf, fetchRenewalInfo, trustAcmeCa } from './acme.js';
import { cloudflareSolver, httpResponder, readTsigKey, rfc2136Solver, webrootSolver } from './challenges.js';
import type { AcmeTxtPublisher, ChallengeSolver } from './challenges.js';
import type { CertRepository, CertRow } from './cert.repository.js';
import type { CertificateDeployer, DeployProof, TlsService } from './deployer.js';
import type { CertView, RenewOutcome } from './schema.js';
import type { DaneKeys, DaneRolloverState } from '../dns/index.js';

/** The mail host's DANE key state, or null when mailsvc keeps none for it yet. */
async function daneStatus(keys: DaneKeys): Promise<DaneRolloverState | null> {
  try {
    return await keys.status();
  } catch (err) {
    if (err instanceof AppError && err.code === 'not_found') return null;
    throw err;
  }
}

const DAY = 86_400_000;
const HOST = /^(?=.{1,253}$)([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z0-9-]{2,63}$/;
const CERT_NAME = /^[a-z0-9][a-z0-9-]{0,62}$/;
/** How often the CA's renewal information is asked again when it gives no Retry-After. */
const ARI_RECHECK_MS = 6 * 3_600_000;

export type CertsDeps = {
  repo: CertRepository;
  box: () => SecretBox;
  clock: Clock;
  settings: CertsSettings;
  /** Where dns-01 answers published through Cloudflare are checked (MAILSVC_DNS_AUTHORITATIVE, else the resolvers). */
  dnsCheck: readonly DnsServer[];
  activeDomains: () => Promise<string[]>;
  deployer: CertificateDeployer;
  /** The services whose ports must serve the certificate (MAILSVC_DOCTOR_TLS_PORTS' kinds). */
  services: readonly TlsService[];
  cloudflare?: AcmeTxtPublisher | undefined;
  /** The DNS module's DANE keys (docs/certs.md "DANE"): a certificate of the mail host with a new key waits for its TLSA record. */
  dane?: { keys(mailHost: string): DaneKeys } | undefined;
  /** Reports progress of long work (the CLI's lines). */
  progress?: (line: string) => void;
  /**
   * Where the per-certificate lock files are (the data dir): one issue or
   * renewal of a certificate at a time across every process on this host.
   */
  lockDir: string;
};

/** A progress report of a job: how far (0..1) and what it does now. */
export type CertProgress = (fraction: number, line: string) => void;

/** What `mailsvc …` this process is, for a lock's holder ("mailsvc serve", "mailsvc certs renew"). */
function processName(): string {
  const [, script = '', ...args] = process.argv;
  const words = args.filter((a) => !a.startsWith('-')).slice(0, 2).join(' ');
  return /mailsvc/.test(basename(script)) ? `mailsvc ${words}`.trim() : `${basename(script) || 'node'} ${words}`.trim();
}

/** When a certificate is due: inside the CA's ARI window, else at two thirds of its lifetime (RFC 9773 §4.2, Let's Encrypt's advice). */
export function renewalTime(r: Pick<CertRow, 'not_before' | 'not_after' | 'ari_start'>): number | null {
  if (r.not_before === null || r.not_after === null) return null;
  if (r.ari_start !== null) return r.ari_start;
  return r.not_before + Math.floor(((r.not_after - r.not_before) * 2) / 3);
}

/** Whether `r` should be renewed at `now`, and why (the timer's decision). Backoff after failures wins over everything but `force`. */
export function renewalDecision(r: CertRow, wanted: readonly string[] | null, now: number): { due: boolean; why: string } {
  if (r.next_attempt_at !== null && r.next_attempt_at > now) return { due: false, why: `waiting until ${new Date(r.next_attempt_at).toISOString()} after ${r.failures} failed attempt${r.failures === 1 ? '' : 's'}` };
  if (r.chain_pem === null) return { due: true, why: 'no certificate yet' };
  if (r.revoked_at !== null) return { due: true, why: 'the certificate was revoked' };
  if (wanted !== null && JSON.stringify([...wanted].sort()) !== JSON.stringify([...(JSON.parse(r.names) as string[])].sort())) return { due: true, why: 'the names changed' };
  const at = renewalTime(r) as number;
  if (now >= at) return { due: true, why: r.ari_start !== null ? 'inside the renewal window the CA suggests (ARI)' : 'two thirds of its lifetime have passed' };
  return { due: false, why: `renews at ${new Date(at).toISOString()}${r.ari_start !== null ? ' (the CA\'s ARI window)' : ' (two thirds of its lifetime)'}` };
}

/** Wait after `failures` failed attempts in a row: base, doubling, at most max. */
export const backoffMs = (failures: number, baseS: number, maxS: number): number => Math.min(maxS, baseS * 2 ** Math.max(0, failures - 1)) * 1000;

const iso = (ms: number | null): string | null => (ms === null ? null : new Date(ms).toISOString());

/** What an ACME failure means for the administrator: the code and a line with what to do next. */
function explain(err: unknown, directoryUrl: string): AppError {
  if (err instanceof AppError) return err;
  if (err instanceof AcmeRateLimited) return new AppError('rate_limited', `${err.message}; mailsvc tries again after ${new Date(Date.now() + err.retryAfterSeconds * 1000).toISOString()} (Retry-After ${err.retryAfterSeconds} s)`, { retryAfter: err.retryAfterSeconds });
  const e = err as NodeJS.ErrnoException & { response?: unknown };
  const code = e.code ?? '';
  if (/^(ECONNREFUSED|ENOTFOUND|EAI_AGAIN|ETIMEDOUT|ECONNRESET|EHOSTUNREACH|ENETUNREACH|ECONNABORTED)$/.test(code) || /CERT|SELF_SIGNED|UNABLE_TO/i.test(code)) {
    return new AppError('unavailable', `the ACME server ${directoryUrl} cannot be reached (${code}): check MAILSVC_ACME_DIRECTORY_URL, the network, and for a private CA MAILSVC_ACME_CA_FILE`);
  }
  const msg = (e.message ?? String(err)).replace(/\s+/g, ' ').slice(0, 400);
  return new AppError('upstream', `the CA refused: ${msg}`);
}

/** Issue, renew, revoke and show the certificates of this host (docs/certs.md). */
export class CertService {
  private readonly reporter = new AsyncLocalStorage<{ report: CertProgress; at: number }>();
  private directory: Promise<Record<string, unknown>> | undefined;

  constructor(private readonly d: CertsDeps) {
    if (d.settings.caFile) {
      try {
        trustAcmeCa([readFileSync(d.settings.caFile, 'utf8')]);
      } catch {
        // Reported when the CA is first asked: the directory cannot be reached.
      }
    }
  }

  private get now(): number {
    return this.d.clock.now();
  }

  /** A progress line; inside withProgress also how far the work is (0..1; the last fraction when not given). */
  private say(line: string, fraction?: number): void {
    const scope = this.reporter.getStore();
    if (scope) {
      if (fraction !== undefined) scope.at = fraction;
      scope.report(scope.at, line);
      return;
    }
    this.d.progress?.(line);
  }

  /** Runs `work` (issue, renew) with its progress reported to `report` (a job's), however many run at once. */
  withProgress<T>(report: CertProgress, work: () => Promise<T>): Promise<T> {
    return this.reporter.run({ report, at: 0 }, work);
  }

  /** Within a renewal of several certificates: the i-th of n reports its progress as its share of the whole. */
  private share<T>(i: number, n: number, work: () => Promise<T>): Promise<T> {
    const outer = this.reporter.getStore();
    if (!outer || n <= 1) return work();
    return this.reporter.run({ report: (f, line) => outer.report((i + f) / n, line), at: 0 }, work);
  }

  /** The names a certificate of this host carries: the mail host, the panel, `mta-sts.`/`autoconfig.` per active domain as configured. */
  async wantedNames(): Promise<string[]> {
    const s = this.d.settings;
    if (!s.mailHostname) return [];
    const names = [s.mailHostname, ...(s.panelHostname ? [s.panelHostname] : [])];
    if (s.domainNames.length) for (const d of await this.d.activeDomains()) for (const k of s.domainNames) names.push(`${k}.${d}`);
    return [...new Set(names)];
  }

  /** Refuses a name that is malformed (422) or not one of this host's (400), saying which are. */
  private async checkNames(names: readonly string[]): Promise<string[]> {
    const s = this.d.settings;
    if (!s.mailHostname) throw new AppError('bad_request', 'no mail host name is set: set MAILSVC_MAIL_HOSTNAME (and MAILSVC_PANEL_HOSTNAME if the panel has its own name), then run mailsvc certs issue');
    const out: string[] = [];
    for (const raw of names) {
      const n = raw.trim().toLowerCase().replace(/\.$/, '');
      if (!HOST.test(n)) throw new AppError('validation', `"${raw.slice(0, 80)}" is not a host name`, { errors: [{ path: 'body.names', message: `"${raw.slice(0, 80)}" is not a host name` }] });
      out.push(n);
    }
    const domains = await this.d.activeDomains();
    const ours = (n: string) => n === s.mailHostname || n === s.panelHostname || domains.some((d) => n === `mta-sts.${d}` || n === `autoconfig.${d}`);
    const foreign = out.filter((n) => !ours(n));
    if (foreign.length) throw new AppError('bad_request', `${foreign.join(', ')} ${foreign.length === 1 ? 'is' : 'are'} not one of this server's names: a certificate holds MAILSVC_MAIL_HOSTNAME (${s.mailHostname}), MAILSVC_PANEL_HOSTNAME and mta-sts./autoconfig. of a domain mailsvc serves`);
    if (out.length === 0) throw new AppError('validation', 'names: at least one', { errors: [{ path: 'body.names', message: 'at least one name' }] });
    return [...new Set(out)];
  }

  private view(r: CertRow): CertView {
    const now = this.now;
    const state = r.chain_pem === null ? 'none' : r.revoked_at !== null ? 'revoked' : (r.not_after ?? 0) <= now ? 'expired' : (r.not_after ?? 0) - now < this.d.settings.alarmDays * DAY ? 'expiring' : 'valid';
    return {
      name: r.name,
      names: JSON.parse(r.names) as string[],
      state,
      serial: r.serial,
      sha256: r.sha256,
      not_before: iso(r.not_before),
      not_after: iso(r.not_after),
      days_left: r.not_after === null ? null : Math.floor((r.not_after - now) / DAY),
      renew_at: iso(renewalTime(r)),
      ari_window: r.ari_start !== null && r.ari_end !== null ? { start: iso(r.ari_start) as string, end: iso(r.ari_end) as string } : null,
      issued_at: iso(r.issued_at),
      revoked_at: iso(r.revoked_at),
      last_attempt_at: iso(r.last_attempt_at),
      last_error: r.last_error,
      failures: r.failures,
      next_attempt_at: iso(r.next_attempt_at),
      proof: r.proof === null ? null : (JSON.parse(r.proof) as DeployProof),
      pending: r.pending_chain_pem === null ? null : (({ sha256, notAfter }) => ({ sha256, not_after: iso(notAfter), issued_at: iso(r.pending_since) }))(certFacts(r.pending_chain_pem)),
    };
  }

  async list(): Promise<CertView[]> {
    return (await this.d.repo.list()).map((r) => this.view(r));
  }

  async show(name: string): Promise<CertView & { chain_pem: string | null }> {
    const r = await this.row(name);
    return { ...this.view(r), chain_pem: r.chain_pem };
  }

  private async row(name: string): Promise<CertRow> {
    if (!CERT_NAME.test(name)) throw new AppError('validation', 'a certificate name is lowercase letters, digits and dashes (mail)', { errors: [{ path: 'params.name', message: 'lowercase letters, digits and dashes' }] });
    const r = await this.d.repo.get(name);
    if (!r) throw new AppError('not_found', `No certificate ${name}: mailsvc certs issue ${name}`);
    return r;
  }

  /** Certificates of ours that expire within the alarm days (or have expired): /health/details is degraded by each. */
  async expiring(): Promise<{ name: string; days_left: number }[]> {
    const now = this.now;
    return (await this.d.repo.list())
      .filter((r) => r.not_after !== null && r.revoked_at === null && r.not_after - now < this.d.settings.alarmDays * DAY)
      .map((r) => ({ name: r.name, days_left: Math.floor(((r.not_after as number) - now) / DAY) }));
  }

  /**
   * What is refused before an issue job is queued: a malformed name (422), a
   * name not ours or no mail host name (400), and another operation on the
   * certificate running now (409). Answers the names the certificate will hold.
   */
  async checkIssue(name = 'mail', opts: { names?: readonly string[] | undefined } = {}): Promise<string[]> {
    if (!CERT_NAME.test(name)) throw new AppError('validation', 'a certificate name is lowercase letters, digits and dashes (mail)', { errors: [{ path: 'body.name', message: 'lowercase letters, digits and dashes' }] });
    const names = await this.checkNames(opts.names?.length ? opts.names : await this.wantedNames());
    checkLock(this.lockPath(name), this.busy(name));
    return names;
  }

  /** What is refused before a renewal job is queued: an unknown certificate (404), a malformed name (422), another operation on one of them running now (409). */
  async checkRenew(opts: { name?: string | undefined } = {}): Promise<void> {
    const names = opts.name === undefined ? (await this.d.repo.list()).map((r) => r.name) : [(await this.row(opts.name)).name];
    for (const n of names) checkLock(this.lockPath(n), this.busy(n));
  }

  /** Issues a certificate now (a new order), deploys it and proves it on the wire; the previous one serves until then. */
  issue(name = 'mail', opts: { names?: readonly string[] | undefined; newKey?: boolean | undefined } = {}): Promise<CertView> {
    if (!CERT_NAME.test(name)) throw new AppError('validation', 'a certificate name is lowercase letters, digits and dashes (mail)', { errors: [{ path: 'body.name', message: 'lowercase letters, digits and dashes' }] });
    return this.exclusive(name, 'issue', async () => {
      const names = await this.checkNames(opts.names?.length ? opts.names : await this.wantedNames());
      const row = await this.d.repo.ensure(name, names, this.now);
      return this.attempt(row, names, opts.newKey ?? false);
    });
  }

  /**
   * The timer's check: every certificate (the `mail` one made when the mail host
   * name is set and there is none), renewed when due (ARI or two thirds), a
   * failed one again after its backoff. `force` renews whatever is there.
   */
  async renew(opts: { name?: string | undefined; force?: boolean | undefined } = {}): Promise<RenewOutcome[]> {
    const wanted = await this.wantedNames();
    if (opts.name === undefined && wanted.length && (await this.d.repo.list()).length === 0) await this.d.repo.ensure('mail', wanted, this.now);
    const rows = opts.name === undefined ? await this.d.repo.list() : [await this.row(opts.name)];
    const outcomes = await Promise.all(rows.map((r) => this.refreshAri(r)));
    const results: RenewOutcome[] = [];
    for (const [i, r] of outcomes.entries()) {
      results.push(await this.share(i, outcomes.length, () => this.renewOne(r, wanted, opts.force === true)));
    }
    return results;
  }

  /** The renewal check of one certificate: its held-back certificate first, else a new one when due. */
  private async renewOne(r: CertRow, wanted: readonly string[], force: boolean): Promise<RenewOutcome> {
    const failedNow = async (err: unknown): Promise<RenewOutcome> => {
      const e = err instanceof AppError ? err : explain(err, this.d.settings.directoryUrl);
      return { name: r.name, action: 'failed', detail: e.detail, certificate: this.view((await this.d.repo.get(r.name)) as CertRow) };
    };
    if (r.pending_chain_pem !== null) {
      // A certificate with a new key waits for its DANE record: no new order until it is deployed (even with force).
      if (!force && r.next_attempt_at !== null && r.next_attempt_at > this.now) {
        return { name: r.name, action: 'skipped', detail: `the held-back certificate's deployment failed; waiting until ${new Date(r.next_attempt_at).toISOString()}`, certificate: this.view(r) };
      }
      try {
        const done = await this.exclusive(r.name, 'renewal', () => this.deployPending(r));
        if ('view' in done) return { name: r.name, action: 'renewed', detail: done.detail, certificate: done.view };
        const st = done.waiting;
        return { name: r.name, action: 'skipped', detail: `a certificate with a new key waits for its DANE record (${st.state}${st.waiting ? `: ${st.waiting}` : ''})`, certificate: this.view(r) };
      } catch (err) {
        return failedNow(err);
      }
    }
    // A DANE step that fails (the DNS unreachable) does not stop the renewal check: the next one tries again.
    await this.finishDane(r).catch((err: unknown) => this.say(`${r.name}: the DANE key change could not be completed now: ${(err as Error).message.slice(0, 200)}`));
    const own = r.name === 'mail' ? wanted : null;
    const decision = force ? { due: true, why: 'forced' } : renewalDecision(r, own && own.length ? own : null, this.now);
    if (!decision.due) return { name: r.name, action: 'skipped', detail: decision.why, certificate: this.view(r) };
    this.say(`${r.name}: renewing (${decision.why})`);
    try {
      const names = own && own.length ? [...own] : (JSON.parse(r.names) as string[]);
      const cert = await this.exclusive(r.name, 'renewal', () => this.attempt(r, names, r.revoked_at !== null));
      return { name: r.name, action: 'renewed', detail: decision.why, certificate: cert };
    } catch (err) {
      return failedNow(err);
    }
  }

  /** Asks the CA's renewal information (when it offers it and the last answer's Retry-After has passed); never fails the check. */
  private async refreshAri(r: CertRow): Promise<CertRow> {
    if (r.chain_pem === null || r.revoked_at !== null || (r.ari_next_check !== null && r.ari_next_check > this.now)) return r;
    try {
      const info = await fetchRenewalInfo(this.d.settings.directoryUrl, r.chain_pem);
      const next = this.now + (info?.retryAfterSeconds ? info.retryAfterSeconds * 1000 : ARI_RECHECK_MS);
      const values = { ari_start: info?.start ?? null, ari_end: info?.end ?? null, ari_next_check: next, updated_at: this.now };
      await this.d.repo.update(r.name, values);
      return { ...r, ...values };
    } catch {
      return r;
    }
  }

  private lockPath(name: string): string {
    return join(this.d.lockDir, `certs-${name}.lock`);
  }

  private busy(name: string): (held: LockHolder) => string {
    return (held) => `${held.what} is running (pid ${held.pid}, since ${held.since}): one issue or renewal of a certificate at a time; wait for it to end (mailsvc certs show ${name} then shows the outcome) and try again`;
  }

  /**
   * One issue or renewal of a certificate at a time, across processes (the
   * API's job, the CLI, the timer): `<data dir>/certs-<name>.lock`. A second
   * one is refused at once (409, exit 3); a lock whose process died is removed.
   */
  private async exclusive<T>(name: string, action: 'issue' | 'renewal', work: () => Promise<T>): Promise<T> {
    mkdirSync(this.d.lockDir, { recursive: true });
    // 0644: the service (user mailsvc) and a root CLI each read who holds it.
    const release = takeLock(this.lockPath(name), `the ${action} of certificate ${name} (${processName()})`, { mode: 0o644, busy: this.busy(name) });
    try {
      return await work();
    } finally {
      release();
    }
  }

  private async accountClient() {
    const s = this.d.settings;
    const id = createHash('sha256').update(s.directoryUrl).digest('hex').slice(0, 32);
    const box = this.d.box();
    let acct = await this.d.repo.account(id);
    if (!acct) {
      const key = (await (await acmeCrypto()).createPrivateEcdsaKey('P-256')).toString();
      acct = await this.d.repo.putAccount({ id, directory_url: s.directoryUrl, account_key: box.seal(key, sealContext('acme_accounts', id, 'account_key')), account_url: null, created_at: this.now });
    }
    const client = await acmeClient({ directoryUrl: s.directoryUrl, accountKey: box.open(acct.account_key, sealContext('acme_accounts', id, 'account_key')), accountUrl: acct.account_url });
    if (!acct.account_url) {
      this.say('registering the ACME account', 0.05);
      await client.createAccount({ termsOfServiceAgreed: true, ...(s.email ? { contact: [`mailto:${s.email}`] } : {}) });
      await this.d.repo.setAccountUrl(id, client.getAccountUrl());
    }
    return client;
  }

  private async solver(): Promise<ChallengeSolver> {
    const s = this.d.settings;
    if (s.challenge === 'dns-01-rfc2136') return rfc2136Solver(s.nsupdate, s.rfc2136Server as DnsServer, await readTsigKey(s.tsigKeyFile as string));
    if (s.challenge === 'dns-01-cloudflare') {
      if (!this.d.cloudflare) throw new AppError('unavailable', 'dns-01-cloudflare needs the dns module');
      return cloudflareSolver(this.d.cloudflare, this.d.dnsCheck);
    }
    return s.webroot ? webrootSolver(s.webroot) : httpResponder(s.httpAddress, s.httpPort);
  }

  /**
   * One attempt: order, challenges, finalize, download, deploy and prove.
   * Only a proven certificate replaces the stored one; any failure is
   * recorded (the error line, failures + 1, the next attempt after the
   * backoff or the CA's Retry-After) and thrown.
   */
  private async attempt(row: CertRow, names: string[], newKey: boolean): Promise<CertView> {
    const started = this.now;
    await this.d.repo.update(row.name, { last_attempt_at: started, updated_at: started });
    try {
      const client = await this.accountClient();
      const box = this.d.box();
      const ctx = sealContext('certificates', row.name, 'private_key');
      // The key is kept across renewals (a DANE 3 1 1 record stays true) unless asked for a new one or the old was revoked.
      const keyPem = row.private_key !== null && !newKey ? box.open(row.private_key, ctx) : (await (await acmeCrypto()).createPrivateEcdsaKey('P-256')).toString();
      const [, csr] = await (await acmeCrypto()).createCsr({ commonName: names[0] as string, altNames: names }, keyPem);
      const replaces = row.chain_pem !== null && (await this.offersAri()) ? ariCertId(row.chain_pem) : null;
      this.say(`ordering a certificate for ${names.join(', ')}`, 0.1);
      const order = await client.createOrder({ identifiers: names.map((value) => ({ type: 'dns', value })), ...(replaces ? { replaces } : {}) } as Parameters<typeof client.createOrder>[0]);
      const solver = await this.solver();
      try {
        const authzs = await client.getAuthorizations(order);
        for (const [i, authz] of authzs.entries()) {
          if (authz.status === 'valid') continue;
          const name = authz.identifier.value;
          const challenge = authz.challenges.find((c) => c.type === solver.type);
          if (!challenge) throw new AppError('upstream', `the CA offers no ${solver.type} challenge for ${name}: choose another MAILSVC_ACME_CHALLENGE`);
          const keyAuth = await client.getChallengeKeyAuthorization(challenge);
          this.say(`${name}: answering ${solver.type}`, 0.15 + (0.45 * i) / authzs.length);
          await solver.present(name, challenge.token, keyAuth);
          try {
            await client.completeChallenge(challenge);
            await client.waitForValidStatus(challenge);
          } catch (err) {
            const detail = (err as Error).message.replace(/\s+/g, ' ').slice(0, 300);
            throw new AppError('upstream', `the CA could not validate ${name} by ${solver.type}: ${detail}; ${solver.type === 'http-01' ? `check that http://${name}/.well-known/acme-challenge/ reaches this host` : `check that _acme-challenge.${name} is served by the zone's authoritative servers`}`);
          } finally {
            await solver.cleanup(name, challenge.token, keyAuth).catch(() => undefined);
          }
        }
      } finally {
        await solver.close();
      }
      this.say('the challenges are answered: finalizing the order', 0.6);
      const finalized = await client.finalizeOrder(order, csr);
      const chainPem = await client.getCertificate(finalized);
      const facts = certFacts(chainPem);
      // DANE (docs/certs.md "DANE"): a new key for the mail host is published first; the certificate waits.
      const dane = this.daneKeys(names);
      let change: DaneRolloverState | null = null;
      if (dane) {
        const st = await daneStatus(dane);
        if (st && !(st.state === 'idle' && st.current_spki === facts.spkiSha256)) {
          change = await dane.prepareKeyChange(facts.spkiSha256);
          if (change.state === 'idle') change = null; // the key in service after all: the change was called off
          else if (change.state !== 'ready-to-deploy') {
            const now = this.now;
            await this.d.repo.update(row.name, {
              pending_chain_pem: chainPem,
              pending_private_key: box.seal(keyPem, sealContext('certificates', row.name, 'pending_private_key')),
              pending_names: JSON.stringify(names),
              pending_since: now,
              last_error: null,
              failures: 0,
              next_attempt_at: null,
              updated_at: now,
            });
            this.say(`issued ${facts.serial} with a new key: held back until its DANE record is published everywhere and the TTL has passed (${change.state}${change.waiting ? `: ${change.waiting}` : ''}); the renewal check deploys it then`);
            return this.view((await this.d.repo.get(row.name)) as CertRow);
          }
        }
      }
      this.say(`issued ${facts.serial}; deploying and proving on ${this.d.services.join(', ') || 'no port'}`, 0.7);
      return await this.deployAndTake(row.name, names, chainPem, keyPem, dane, change !== null);
    } catch (err) {
      throw await this.failed(row.name, err);
    }
  }

  /** The DANE key of the mail host when `names` holds it and port 25 is among the ports proven; else null. */
  private daneKeys(names: readonly string[]): DaneKeys | null {
    const host = this.d.settings.mailHostname;
    if (!this.d.dane || !host || !names.includes(host) || !this.d.services.includes('smtp')) return null;
    return this.d.dane.keys(host);
  }

  /**
   * Deploys and proves `chainPem`; only a proven one becomes the certificate in
   * service (a held-back one is then gone). DANE: the first certificate's key
   * becomes the current one; a key change is completed (the old record withdrawn).
   */
  private async deployAndTake(name: string, names: string[], chainPem: string, keyPem: string, dane: DaneKeys | null, keyChange: boolean): Promise<CertView> {
    const facts = certFacts(chainPem);
    let proof: DeployProof;
    try {
      proof = await this.d.deployer.deployAndProve({ certName: name, chainPem, keyPem, services: [...this.d.services] });
    } catch (err) {
      throw new AppError('upstream', `the certificate was issued but not deployed: ${(err as Error).message.slice(0, 300)}; the previous certificate stays in service`);
    }
    if (!proof.ok) {
      const bad = proof.ports.filter((p) => !p.matches).map((p) => `${p.service} (${p.port}): ${p.detail ?? 'another certificate'}`);
      await this.d.repo.update(name, { proof: JSON.stringify(proof) });
      throw new AppError('upstream', `the certificate was issued but not proven on ${bad.join('; ')}; the previous certificate stays in service: fix the daemon, then run mailsvc certs renew ${name} --force`);
    }
    const now = this.now;
    await this.d.repo.update(name, {
      names: JSON.stringify(names),
      chain_pem: chainPem,
      private_key: this.d.box().seal(keyPem, sealContext('certificates', name, 'private_key')),
      serial: facts.serial,
      sha256: facts.sha256,
      not_before: facts.notBefore,
      not_after: facts.notAfter,
      ari_start: null,
      ari_end: null,
      ari_next_check: null,
      issued_at: now,
      revoked_at: null,
      last_error: null,
      failures: 0,
      next_attempt_at: null,
      proof: JSON.stringify(proof),
      pending_chain_pem: null,
      pending_private_key: null,
      pending_names: null,
      pending_since: null,
      updated_at: now,
    });
    if (dane) {
      if (keyChange) await dane.completeKeyChange();
      else if ((await daneStatus(dane)) === null) await dane.setCurrent(facts.spkiSha256);
    }
    const stored = await this.refreshAri((await this.d.repo.get(name)) as CertRow);
    return this.view(stored);
  }

  /** Records a failed attempt (the error line, failures + 1, the next attempt after the backoff or Retry-After); answers the error to throw. */
  private async failed(name: string, err: unknown): Promise<AppError> {
    const s = this.d.settings;
    const e = explain(err, s.directoryUrl);
    const current = (await this.d.repo.get(name)) as CertRow;
    const failures = current.failures + 1;
    const wait = Math.max(backoffMs(failures, s.retryBaseSeconds, s.retryMaxSeconds), (e.extra.retryAfter ?? 0) * 1000);
    await this.d.repo.update(name, { last_error: e.detail.slice(0, 1000), failures, next_attempt_at: this.now + wait, updated_at: this.now });
    return e;
  }

  /**
   * The renewal check's DANE step for a certificate held back for its new
   * key: the key change is taken as far as it goes now (resumable: every
   * state is in the database); at ready-to-deploy the certificate is
   * deployed and proven, then the key change completed; before: the state it waits in.
   */
  private async deployPending(r: CertRow): Promise<{ view: CertView; detail: string } | { waiting: DaneRolloverState }> {
    const chainPem = r.pending_chain_pem as string;
    const names = JSON.parse(r.pending_names ?? r.names) as string[];
    const dane = this.daneKeys(names);
    const spki = certFacts(chainPem).spkiSha256;
    let keyChange = false;
    if (dane && (await daneStatus(dane)) !== null) {
      // Publishes the next record again if a crash came between holding the certificate back and publishing it.
      const st = await dane.prepareKeyChange(spki);
      if (st.state !== 'ready-to-deploy' && !(st.state === 'idle' && st.current_spki === spki)) return { waiting: st };
      keyChange = st.state === 'ready-to-deploy';
    }
    this.say(`${r.name}: its DANE record is published everywhere and the TTL has passed: deploying the held-back certificate`, 0.5);
    try {
      const keyPem = this.d.box().open(r.pending_private_key as string, sealContext('certificates', r.name, 'pending_private_key'));
      const view = await this.deployAndTake(r.name, names, chainPem, keyPem, dane, keyChange);
      return { view, detail: 'the certificate with the new key, after its DANE record' };
    } catch (err) {
      throw await this.failed(r.name, err);
    }
  }

  /** A key change whose certificate was deployed but not completed (a crash in between): completed now. */
  private async finishDane(r: CertRow): Promise<void> {
    if (r.chain_pem === null || r.pending_chain_pem !== null) return;
    const dane = this.daneKeys(JSON.parse(r.names) as string[]);
    const st = dane ? await daneStatus(dane) : null;
    if (!dane || !st) return;
    if (st.state === 'ready-to-deploy' && st.next_spki === certFacts(r.chain_pem).spkiSha256) await dane.completeKeyChange();
    else if (st.state === 'retiring-old') await dane.advance();
  }

  private async offersAri(): Promise<boolean> {
    this.directory ??= directoryOf(this.d.settings.directoryUrl).catch(() => ({}));
    return typeof (await this.directory).renewalInfo === 'string';
  }

  /** Revokes the certificate in service at the CA; the next renewal issues a new one with a new key. */
  async revoke(name: string, reason = 0): Promise<CertView> {
    const r = await this.row(name);
    if (r.chain_pem === null) throw new AppError('not_found', `Certificate ${name} has not been issued yet`);
    if (r.revoked_at !== null) throw new AppError('conflict', `Certificate ${name} (${r.serial ?? ''}) is already revoked: mailsvc certs issue ${name} gets a new one`);
    try {
      const client = await this.accountClient();
      await client.revokeCertificate(r.chain_pem, { reason });
    } catch (err) {
      throw explain(err, this.d.settings.directoryUrl);
    }
    await this.d.repo.update(name, { revoked_at: this.now, updated_at: this.now });
    return this.view((await this.d.repo.get(name)) as CertRow);
  }
}
