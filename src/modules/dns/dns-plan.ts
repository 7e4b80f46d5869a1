import { createHash } from 'node:crypto';
import ipaddr from 'ipaddr.js';
import type { MailService, MailServices } from '../../adapters/mail-services.js';
import { AppError } from '../../shared/errors.js';
import { normalizeDomain } from '../../shared/mail-names.js';
import { dkimRecordValue } from './dkim-keygen.js';
import type { DkimAlgorithm } from './dkim-keygen.js';
import type { DkimKeyRow } from './dkim.repository.js';
import type { Tlsa } from '../../adapters/dns/tlsa-query.js';
import { tlsaText } from '../../adapters/dns/tlsa-query.js';
import type { DnsPlan, DnsRecord } from './schema.js';
import { zoneTxt } from './txt.js';

export const PLAN_TTL = 3600;
/** MTA-STS policy lifetime: one week (RFC 8461 suggests weeks once it works). */
export const MTA_STS_MAX_AGE = 604800;

export type PlanInput = {
  domain: string;
  mailHost: string;
  publicIp?: string | undefined;
  srsDomain?: string | undefined;
  dkim: readonly DkimKeyRow[];
  /** What Postfix and Dovecot serve to mail clients (their configuration files): the SRV records. None: no client records. */
  services?: MailServices | undefined;
  /** The mail host's DANE records (the current key's, and the next one's during a key change); none until a key is known. */
  tlsa?: readonly { record: Tlsa; purpose: string }[] | undefined;
};

/** RFC 6186 service names, the implicit-TLS one (RFC 8314) and the STARTTLS one, per protocol. */
const SRV_NAMES: ReadonlyArray<{ protocol: keyof MailServices; tls: string; starttls: string; label: string }> = [
  { protocol: 'submission', tls: '_submissions._tcp', starttls: '_submission._tcp', label: 'SMTP submission' },
  { protocol: 'imap', tls: '_imaps._tcp', starttls: '_imap._tcp', label: 'IMAP' },
  { protocol: 'pop3', tls: '_pop3s._tcp', starttls: '_pop3._tcp', label: 'POP3' },
];
/** Implicit TLS before STARTTLS (RFC 8314 §5.1): a lower priority number across the pair (RFC 6186 §3.4). */
const SRV_PRIORITY = { tls: 0, starttls: 10 } as const;

/**
 * The SRV records mail clients look up (RFC 6186), implicit TLS preferred
 * (RFC 8314): one per offered service, and "0 0 0 ." (RFC 2782: not offered
 * at this domain) for a name with nothing behind it.
 */
export function clientSrvRecords(domain: string, mailHost: string, services: MailServices): DnsRecord[] {
  const out: DnsRecord[] = [];
  for (const { protocol, tls, starttls, label } of SRV_NAMES) {
    for (const security of ['tls', 'starttls'] as const) {
      const name = `${security === 'tls' ? tls : starttls}.${domain}`;
      const offered = services[protocol].filter((s: MailService) => s.security === security);
      const how = security === 'tls' ? 'implicit TLS (RFC 8314, preferred)' : 'STARTTLS';
      if (offered.length === 0) out.push(rec(name, 'SRV', '0 0 0 .', `${label} with ${how} is not offered (RFC 6186: target ".")`));
      for (const s of offered) out.push(rec(name, 'SRV', `${SRV_PRIORITY[security]} 1 ${s.port} ${mailHost}.`, `mail clients find ${label} with ${how} on port ${s.port} (RFC 6186)`));
    }
  }
  return out;
}

/** The values mailsvc asks for; the deliverability check compares against the same functions. */
export const spfValue = (): string => 'v=spf1 mx -all';
export const srsSpfValue = (mailHost: string): string => `v=spf1 a:${mailHost} -all`;
export const dmarcValue = (domain: string): string => `v=DMARC1; p=quarantine; adkim=s; aspf=s; rua=mailto:dmarc-reports@${domain}`;
export const tlsRptValue = (domain: string): string => `v=TLSRPTv1; rua=mailto:tls-reports@${domain}`;
export const mtaStsPolicy = (mailHost: string): string => `version: STSv1\nmode: enforce\nmx: ${mailHost}\nmax_age: ${MTA_STS_MAX_AGE}\n`;
/** The policy id changes exactly when the policy does (RFC 8461 §3.1: 1–32 alphanumerics). */
export const mtaStsId = (policy: string): string => createHash('sha256').update(policy).digest('hex').slice(0, 20);

export function parseIp(text: string): ipaddr.IPv4 | ipaddr.IPv6 {
  if (!ipaddr.isValid(text)) throw new AppError('bad_request', `"${text}" is not an IPv4 or IPv6 address`);
  const ip = ipaddr.parse(text);
  return ip.kind() === 'ipv6' && (ip as ipaddr.IPv6).isIPv4MappedAddress() ? (ip as ipaddr.IPv6).toIPv4Address() : ip;
}

/** The reverse-zone name of an address (in-addr.arpa / ip6.arpa). */
export function reverseName(ip: ipaddr.IPv4 | ipaddr.IPv6): string {
  if (ip.kind() === 'ipv4') return `${[...ip.toByteArray()].reverse().join('.')}.in-addr.arpa`;
  const hex = ip.toByteArray().map((b) => b.toString(16).padStart(2, '0')).join('');
  return `${[...hex].reverse().join('.')}.ip6.arpa`;
}

const rec = (name: string, type: string, value: string | null, purpose: string, where: DnsRecord['where'] = 'zone'): DnsRecord => ({ name, type, ttl: PLAN_TTL, value, purpose, where });

/** Every record a domain needs, each with why. Pure: the same input gives the same plan. */
export function buildPlan(input: PlanInput): DnsPlan {
  const domain = normalizeDomain(input.domain);
  const mailHost = normalizeDomain(input.mailHost);
  const ip = input.publicIp === undefined ? undefined : parseIp(input.publicIp);
  const policy = mtaStsPolicy(mailHost);
  const records: DnsRecord[] = [
    rec(domain, 'MX', `10 ${mailHost}.`, 'mail for the domain goes to the mail host'),
    ip?.kind() === 'ipv6'
      ? rec(mailHost, 'AAAA', ip.toString(), 'the mail host\'s address')
      : rec(mailHost, 'A', ip?.toString() ?? null, 'the mail host\'s address (the server\'s public IPv4; add an AAAA too if it has IPv6)'),
    rec(domain, 'TXT', spfValue(), 'SPF: only the domain\'s MX hosts send its mail'),
    ...input.dkim.map((k) =>
      rec(`${k.selector}._domainkey.${domain}`, 'TXT', dkimRecordValue(k.algorithm as DkimAlgorithm, k.public_key), `DKIM public key (${k.algorithm}, selector ${k.selector}, ${k.state})`),
    ),
    rec(`_dmarc.${domain}`, 'TXT', dmarcValue(domain), 'DMARC: unaligned mail is quarantined; aggregate reports to dmarc-reports@'),
    rec(`_mta-sts.${domain}`, 'TXT', `v=STSv1; id=${mtaStsId(policy)}`, 'MTA-STS: a policy exists; the id changes with the policy'),
    rec(`mta-sts.${domain}`, 'CNAME', `${mailHost}.`, 'MTA-STS: the host serving https://mta-sts.<domain>/.well-known/mta-sts.txt (its certificate must name mta-sts.<domain>)'),
    rec(`_smtp._tls.${domain}`, 'TXT', tlsRptValue(domain), 'TLS-RPT: where senders report TLS failures'),
    ...(input.services === undefined ? [] : [
      ...clientSrvRecords(domain, mailHost, input.services),
      rec(`autoconfig.${domain}`, 'CNAME', `${mailHost}.`, 'Thunderbird autoconfiguration: https://autoconfig.<domain>/mail/config-v1.1.xml, served by mailsvc behind nginx (its certificate must name autoconfig.<domain>)'),
      rec(`autodiscover.${domain}`, 'CNAME', `${mailHost}.`, 'Outlook Autodiscover: https://autodiscover.<domain>/autodiscover/autodiscover.xml, served by mailsvc behind nginx (its certificate must name autodiscover.<domain>)'),
    ]),
    ...(input.tlsa ?? []).map((t) => rec(`_25._tcp.${mailHost}`, 'TLSA', tlsaText(t.record), t.purpose)),
  ];
  if (input.srsDomain !== undefined && input.srsDomain !== domain) {
    records.push(rec(input.srsDomain, 'TXT', srsSpfValue(mailHost), 'SPF of the SRS domain (MAILSVC_SRS_DOMAIN): forwarded mail leaves with it as envelope sender'));
  }
  if (ip !== undefined) records.push(rec(reverseName(ip), 'PTR', `${mailHost}.`, 'reverse DNS of the public IP: ask the IP\'s owner (hosting provider) to set it', 'reverse-zone'));
  else records.push(rec(`<reverse of the public IP>`, 'PTR', `${mailHost}.`, 'reverse DNS of the public IP: ask the IP\'s owner (hosting provider) to set it', 'reverse-zone'));
  return { domain, mail_host: mailHost, public_ip: ip?.toString() ?? null, records, mta_sts_policy: policy, zone: zoneLines(domain, records) };
}

/** True when `name` is `domain` or below it: a line the domain's zone can hold. */
export const inZone = (name: string, domain: string): boolean => name === domain || name.endsWith(`.${domain}`);

/**
 * Zone-file lines; TXT split into 255-byte strings. A record without a value,
 * for the reverse zone, or for a name outside `domain` (a mail host or SRS
 * domain in another zone: an authoritative server drops such a line as
 * out-of-zone data, silently) is commented out, with the zone it belongs in.
 */
export function zoneLines(domain: string, records: readonly DnsRecord[]): string {
  const out = [`; DNS records for ${domain}, by mailsvc`, `$TTL ${PLAN_TTL}`];
  for (const r of records) {
    out.push(`; ${r.purpose}`);
    const value = r.value === null ? `<${r.type === 'A' ? 'public IPv4' : 'value'}>` : r.type === 'TXT' ? zoneTxt(r.value) : r.value;
    const line = `${r.name}. ${r.ttl} IN ${r.type} ${value}`;
    const elsewhere = r.where === 'zone' && !inZone(r.name, domain);
    if (elsewhere) out.push(`; not in the zone of ${domain}: add it to the zone that holds ${r.name}`);
    out.push(r.value === null || r.where !== 'zone' || elsewhere ? `; ${line}` : line);
  }
  return `${out.join('\n')}\n`;
}
