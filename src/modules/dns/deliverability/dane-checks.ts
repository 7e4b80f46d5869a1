import { X509Certificate, createHash } from 'node:crypto';
import type { DnsServer } from '../../../adapters/dns/dns-client.js';
import { queryTlsa, resolverValidates, tlsaText } from '../../../adapters/dns/tlsa-query.js';
import type { Tlsa } from '../../../adapters/dns/tlsa-query.js';
import type { SmtpProbe } from './remote-checks.js';
import { spkiSha256OfDer } from '../dane-spki.js';
import { fail, pass, unknown, warn } from './types.js';
import type { CheckResult } from './types.js';

/** What the TLSA question at _25._tcp.<mail host> got from each authoritative server of its zone. */
export type TlsaLookup =
  | { kind: 'answered'; name: string; servers: string[]; records: Tlsa[]; signed: boolean; unsignedOn: string[]; disagree: string | null; validatedBy: string | null; queries: number }
  | { kind: 'unanswered'; name: string; detail: string; queries: number };

/**
 * Asks every authoritative server of the mail host's zone for its TLSA
 * records with the DO bit. DNSSEC is judged from those answers: a signed zone
 * sends RRSIG records with every answer (also with "no such record"), an
 * unsigned one never does — the authoritative servers are asked, not a
 * resolver, so no cache and no resolver that strips signatures is in between.
 * The resolvers are asked once too (AD flag): whether the chain of trust from
 * the root holds (a DS record at the parent) is theirs to tell.
 */
export async function lookupTlsa(mailHost: string, servers: readonly DnsServer[], resolvers: readonly DnsServer[], timeoutMs: number): Promise<TlsaLookup> {
  const name = `_25._tcp.${mailHost}`;
  if (servers.length === 0) return { kind: 'unanswered', name, detail: `cannot find the authoritative servers of the zone of ${mailHost}`, queries: 0 };
  const answers = await Promise.all(servers.map(async (s) => ({ server: `${s.host}:${s.port}`, a: await queryTlsa(s, name, { timeoutMs, tries: 2 }) })));
  let queries = servers.length;
  const answered = answers.flatMap((x) => (x.a.kind === 'error' ? [] : [{ server: x.server, a: x.a }]));
  if (answered.length === 0) return { kind: 'unanswered', name, detail: answers.map((x) => (x.a.kind === 'error' ? `${x.server}: ${x.a.detail}` : '')).join('; '), queries };
  const setOf = (a: (typeof answered)[number]['a']) => (a.kind === 'records' ? a.records.map(tlsaText).sort().join(', ') : '');
  const first = answered[0] as (typeof answered)[number];
  const other = answered.find((x) => setOf(x.a) !== setOf(first.a));
  const disagree = other ? `${first.server} answers ${setOf(first.a) || 'none'}, ${other.server} answers ${setOf(other.a) || 'none'}` : null;
  let validatedBy: string | null = null;
  for (const r of resolvers.slice(0, 1)) {
    queries += 1;
    if ((await resolverValidates(r, name, undefined, { timeoutMs, tries: 1 })) === true) validatedBy = `${r.host}:${r.port}`;
  }
  return {
    kind: 'answered',
    name,
    servers: answered.map((x) => x.server),
    records: first.a.kind === 'records' ? first.a.records : [],
    signed: answered.every((x) => x.a.signed),
    unsignedOn: answered.filter((x) => !x.a.signed).map((x) => x.server),
    disagree,
    validatedBy,
    queries,
  };
}

const digest = (data: Buffer, matching: number): string | null => (matching === 0 ? data.toString('hex') : matching === 1 ? createHash('sha256').update(data).digest('hex') : matching === 2 ? createHash('sha512').update(data).digest('hex') : null);

/** Does a TLSA record match the chain port 25 sent (RFC 6698 §2.1; RFC 7672 §3.1: usages 3 DANE-EE on the leaf, 2 DANE-TA on a CA of the chain)? */
export function tlsaMatches(t: Tlsa, chain: readonly Buffer[]): boolean {
  const candidates = t.usage === 3 ? chain.slice(0, 1) : t.usage === 2 ? chain.slice(1) : [];
  return candidates.some((der) => {
    const data = t.selector === 0 ? der : t.selector === 1 ? new X509Certificate(der).publicKey.export({ type: 'spki', format: 'der' }) : null;
    return data !== null && digest(data, t.matching) === t.data.toLowerCase();
  });
}

/**
 * The TLSA records of port 25 against the certificate it serves. DANE is
 * optional and needs DNSSEC: in a zone that is not signed senders ignore
 * TLSA records (RFC 7672 §2.2), so there a missing or wrong record is a
 * recommendation (warn); once the zone is signed it fails.
 */
export function checkDaneTlsa(mailHost: string, lookup: TlsaLookup, smtp: SmtpProbe): CheckResult {
  const r = judgeTlsa(mailHost, lookup, smtp);
  if (r.status !== 'fail' || lookup.kind !== 'answered' || lookup.signed) return r;
  return warn(r.id, r.name, `${r.detail} (recommended, not required: the zone is not DNSSEC-signed, so senders ignore TLSA records until it is; once it is signed this fails)`, r.fix ?? '');
}

function judgeTlsa(mailHost: string, lookup: TlsaLookup, smtp: SmtpProbe): CheckResult {
  const [id, name] = ['dane-tlsa', 'DANE TLSA of port 25'];
  if (lookup.kind === 'unanswered') return unknown(id, name, `${lookup.name}: ${lookup.detail}`);
  if ('unresolved' in smtp) return unknown(id, name, smtp.unresolved);
  if ('noAddress' in smtp) return fail(id, name, `${mailHost} has no address: port 25 cannot be compared with the TLSA records`, `Publish: ${mailHost}. IN A <public IPv4>`);
  const { where, probe } = smtp;
  if (!probe.ok) return unknown(id, name, `${where}: ${probe.detail}`, 'Check that port 25 answers; the TLSA records are compared with the certificate it serves');
  const leaf = probe.chain[0];
  const publish = leaf ? `Publish: ${lookup.name}. IN TLSA 3 1 1 ${spkiSha256OfDer(leaf)} (the key port 25 serves now; mailsvc publishes it in the DNS plan once it manages the certificate)` : 'Offer STARTTLS with a certificate first';
  if (lookup.disagree) return fail(id, name, `the authoritative servers disagree: ${lookup.disagree}`, 'Wait for the zone to reach every server (its SOA serial), then check again');
  if (lookup.records.length === 0) return fail(id, name, `${lookup.name} has no TLSA record: senders cannot authenticate ${mailHost} with DANE`, publish);
  if (!probe.offered || !leaf) return fail(id, name, `${where} does not offer STARTTLS, but ${lookup.name} has TLSA records: DANE senders will not deliver`, 'Set smtpd_tls_security_level = may and a certificate in Postfix');
  const usable = lookup.records.filter((t) => t.usage === 2 || t.usage === 3);
  if (usable.length === 0) return fail(id, name, `${lookup.name}: only PKIX-TA/PKIX-EE records (usage 0 or 1), which SMTP senders ignore (RFC 7672 §3.1.3)`, publish);
  const matching = usable.filter((t) => tlsaMatches(t, probe.chain));
  if (matching.length === 0) {
    return fail(id, name, `${where} serves a key that none of ${usable.map(tlsaText).join(', ')} names: DANE senders refuse to deliver to ${mailHost}`, `${publish}, or serve the certificate whose key the records name`);
  }
  return pass(id, name, `${where}: matches ${matching.map((t) => `${t.usage} ${t.selector} ${t.matching} ${t.data.slice(0, 16)}…`).join(', ')} (${lookup.records.length} record(s) at ${lookup.name})`);
}

/**
 * Is the mail host's zone DNSSEC-signed? Without it senders do not use the
 * TLSA records at all (DANE is inert, RFC 7672 §2.2). Most registrars' zones
 * are unsigned and mail is delivered without it: a recommendation (warn).
 */
export function checkDnssec(mailHost: string, lookup: TlsaLookup): CheckResult {
  const [id, name] = ['dnssec', 'DNSSEC of the mail host\'s zone'];
  if (lookup.kind === 'unanswered') return unknown(id, name, `${lookup.name}: ${lookup.detail}`);
  const fix = `Sign the zone that holds ${mailHost} (your DNS provider's DNSSEC switch, or dnssec-signing in your authoritative server) and publish its DS record at the registrar`;
  if (!lookup.signed) return warn(id, name, `the zone of ${mailHost} is not DNSSEC-signed (no RRSIG from ${lookup.unsignedOn.join(', ')}): senders ignore its TLSA records, DANE is inert (recommended, not required)`, fix);
  const chain = lookup.validatedBy ? `, and the resolver ${lookup.validatedBy} validated the chain of trust (AD)` : '; the resolver did not confirm the chain of trust (no AD flag): check that the DS record is at the parent zone';
  return pass(id, name, `every authoritative server (${lookup.servers.join(', ')}) signs its answers${chain}`);
}
