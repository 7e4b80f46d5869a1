import { DnsClient } from '../../../adapters/dns/dns-client.js';
import type { DnsAnswer, DnsServer, RecordOf, RecordType } from '../../../adapters/dns/dns-client.js';
import type { OutboundPolicy } from '../../../adapters/outbound/address-policy.js';
import type { DkimKeyRow } from '../dkim.repository.js';
import { checkAddress, checkDkim, checkDmarc, checkMtaStsTxt, checkMx, checkPtr, checkSpf, checkTlsRpt } from './dns-checks.js';
import { checkHealth, checkMtaStsPolicy, checkStarttls, probeSmtp } from './remote-checks.js';
import type { SmtpProbe } from './remote-checks.js';
import { checkDaneTlsa, checkDnssec, lookupTlsa } from './dane-checks.js';
import type { TlsaLookup } from './dane-checks.js';
import type { Ask, CheckInput, CheckResult } from './types.js';
import { DnsUnanswered, bare } from './types.js';

export type CheckRunOptions = {
  resolvers: readonly DnsServer[];
  /** Servers asked as the domain's authoritative servers; empty: found from its NS records. */
  authoritative: readonly DnsServer[];
  policy: OutboundPolicy;
  httpsPort: number;
  smtpPort: number;
  timeoutMs?: number;
  ca?: readonly string[] | undefined;
  now: () => number;
  onProgress?: (done: number, total: number, name: string) => void;
};

export type CheckRun = { checks: CheckResult[]; dnsQueries: number; authoritative: string[]; milliseconds: number };

/** A client's answers, each question asked once per run however many checks need it. */
export function once(client: DnsClient): Ask {
  const cache = new Map<string, Promise<DnsAnswer<unknown>>>();
  return (<T extends RecordType>(name: string, type: T): Promise<DnsAnswer<RecordOf<T>>> => {
    const key = `${type} ${bare(name)}`;
    let p = cache.get(key);
    if (!p) {
      p = client.query(bare(name), type);
      cache.set(key, p);
    }
    return p as Promise<DnsAnswer<RecordOf<T>>>;
  }) as Ask;
}

/** The domain's authoritative servers: its NS names' addresses, port 53. */
export async function findAuthoritative(domain: string, any: Ask): Promise<DnsServer[]> {
  const ns = await any(domain, 'NS');
  if (ns.kind !== 'records') return [];
  const addrs = await Promise.all(ns.records.map(async (n) => [await any(n, 'A'), await any(n, 'AAAA')]));
  return addrs.flat().flatMap((a) => (a.kind === 'records' ? a.records.map((host) => ({ host, port: 53 })) : []));
}

/**
 * The authoritative servers of the zone that holds `host`: the NS records of
 * the host's name, else of each parent in turn (a mail host is rarely a zone
 * apex), found through the resolvers.
 */
export async function findZoneAuthoritative(host: string, any: Ask): Promise<DnsServer[]> {
  const labels = bare(host).split('.');
  for (let i = 0; i < labels.length - 1; i++) {
    const servers = await findAuthoritative(labels.slice(i).join('.'), any);
    if (servers.length) return servers;
  }
  return [];
}

/**
 * Every deliverability check of a domain, in parallel, sharing one answer per
 * DNS question. Questions about the domain's zone go to its authoritative
 * servers (no cache between the record and the verdict); the rest to the resolvers.
 */
export async function runChecks(target: { domain: string; mailHost: string; publicIp?: string | undefined; dkim: readonly DkimKeyRow[] }, o: CheckRunOptions): Promise<CheckRun> {
  const started = Date.now();
  const timeoutMs = o.timeoutMs ?? 3000;
  const resolverClient = new DnsClient(o.resolvers, { timeoutMs: Math.min(timeoutMs, 2000), tries: 2 });
  const any = once(resolverClient);
  const servers = o.authoritative.length ? [...o.authoritative] : await findAuthoritative(target.domain, any);
  const zoneClient = servers.length ? new DnsClient(servers, { timeoutMs: Math.min(timeoutMs, 2000), tries: 2 }) : null;
  const zone = zoneClient ? once(zoneClient) : any;
  const input: CheckInput = { domain: bare(target.domain), mailHost: bare(target.mailHost), publicIp: target.publicIp, zone, any, dkim: target.dkim };
  const inZone = (host: string) => host === input.domain || host.endsWith(`.${input.domain}`);
  // HTTPS and SMTP connect to what the same DNS answers say (no second, different lookup).
  const resolve = async (host: string): Promise<string[]> => {
    const ask = inZone(bare(host)) ? zone : any;
    const [a, aaaa] = await Promise.all([ask(host, 'A'), ask(host, 'AAAA')]);
    if (a.kind === 'error' && aaaa.kind === 'error') throw new DnsUnanswered(a.detail);
    return [...(a.kind === 'records' ? a.records : []), ...(aaaa.kind === 'records' ? aaaa.records : [])];
  };
  const remote = { policy: o.policy, resolve, httpsPort: o.httpsPort, smtpPort: o.smtpPort, timeoutMs: Math.max(timeoutMs, 5000), ca: o.ca, now: o.now };
  // One STARTTLS handshake and one TLSA lookup per run, whichever check needs them first.
  let smtp: Promise<SmtpProbe> | undefined;
  const smtpProbe = () => (smtp ??= probeSmtp(input, remote));
  let tlsa: Promise<TlsaLookup> | undefined;
  const tlsaLookup = () =>
    (tlsa ??= (async () => {
      const hostServers = inZone(input.mailHost) || o.authoritative.length ? servers : await findZoneAuthoritative(input.mailHost, any);
      return lookupTlsa(input.mailHost, hostServers, o.resolvers, Math.min(timeoutMs, 2000));
    })());
  const jobs: [string, () => Promise<CheckResult | null>][] = [
    ['MX', () => checkMx(input)],
    ['A/AAAA', () => checkAddress(input)],
    ['SPF', () => checkSpf(input)],
    ['DMARC', () => checkDmarc(input)],
    ['DKIM', () => checkDkim(input)],
    ['PTR', () => checkPtr(input)],
    ['MTA-STS record', () => checkMtaStsTxt(input)],
    ['MTA-STS policy', () => checkMtaStsPolicy(input, remote)],
    ['TLS-RPT', () => checkTlsRpt(input)],
    ['HTTPS health', () => checkHealth(input, remote)],
    ['SMTP STARTTLS', async () => checkStarttls(input, remote, await smtpProbe())],
    ['DANE TLSA', async () => checkDaneTlsa(input.mailHost, await tlsaLookup(), await smtpProbe())],
    ['DNSSEC', async () => checkDnssec(input.mailHost, await tlsaLookup())],
  ];
  let done = 0;
  const results = await Promise.all(
    jobs.map(async ([label, fn]) => {
      const r = await fn().catch((err: unknown): CheckResult => ({ id: label.toLowerCase(), name: label, status: 'unknown', detail: err instanceof Error ? err.message : String(err), fix: null }));
      o.onProgress?.(++done, jobs.length, label);
      return r;
    }),
  );
  return {
    checks: results.filter((r): r is CheckResult => r !== null),
    dnsQueries: resolverClient.queries + (zoneClient?.queries ?? 0) + (tlsa ? (await tlsa).queries : 0),
    authoritative: servers.map((s) => `${s.host}:${s.port}`),
    milliseconds: Date.now() - started,
  };
}
