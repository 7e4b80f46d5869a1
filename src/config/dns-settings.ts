import { SettingsError } from './settings-error.js';

/** A DNS server to ask: an address and a port. */
export type DnsServer = { host: string; port: number };

export type DnsSettings = Readonly<{
  /** MAILSVC_DNS_RESOLVER: the servers every DNS query goes to; empty = the system resolver. */
  resolvers: readonly DnsServer[];
  /**
   * MAILSVC_DNS_AUTHORITATIVE: the servers asked as "the authoritative servers" of
   * every zone instead of the NS records' addresses (a test server, a hidden master).
   * Empty: the NS records of the zone, resolved through the resolvers.
   */
  authoritative: readonly DnsServer[];
  /** MAILSVC_CLOUDFLARE_API_URL: the Cloudflare API base. */
  cloudflareApiUrl: string;
  /** MAILSVC_SRS_DOMAIN: the domain postsrsd rewrites senders into (unset: no SRS SPF record in the plan). */
  srsDomain: string | undefined;
  /** MAILSVC_ENABLE_SRS: a timer keeps postsrsd's excluded domains aligned. */
  enableSrs: boolean;
  /** MAILSVC_ENABLE_DELIVERABILITY_TIMER: a timer runs the deliverability report. */
  enableDeliverabilityTimer: boolean;
  /** MAILSVC_DELIVERABILITY_HTTPS_PORT: the port the MTA-STS policy and health endpoint are fetched on (443; tests and staging set another). */
  deliverabilityHttpsPort: number;
  /** MAILSVC_DELIVERABILITY_SMTP_PORT: the port the STARTTLS check connects to (25). */
  deliverabilitySmtpPort: number;
  /** MAILSVC_POSTSRSD_DEFAULTS: postsrsd's settings file, where SRS_EXCLUDE_DOMAINS is kept (Debian: /etc/default/postsrsd). */
  postsrsdDefaults: string;
  /** MAILSVC_POSTSRSD_FORWARD: postsrsd's forward lookup table, host:port (the live check after a sync). */
  postsrsdForward: DnsServer;
  /** MAILSVC_DKIM_ED25519: new keys come as an RSA and an Ed25519 pair, both signing. */
  dkimEd25519: boolean;
}>;

type Source = Record<string, string | undefined>;
const val = (src: Source, key: string): string | undefined => (src[key] === undefined || src[key] === '' ? undefined : src[key]);

/** `host:port` items (IPv6 as `[addr]:port`); a bare address means port 53. */
export function parseServers(key: string, value: string | undefined): DnsServer[] {
  const out: DnsServer[] = [];
  for (const item of (value ?? '').split(/[\s,]+/).filter(Boolean)) {
    const m = /^\[([0-9a-fA-F:.]+)\](?::(\d{1,5}))?$/.exec(item) ?? /^([^:\s]+)(?::(\d{1,5}))?$/.exec(item) ?? /^([0-9a-fA-F:]+)$/.exec(item);
    const port = m?.[2] === undefined ? 53 : Number(m[2]);
    if (!m?.[1] || port < 1 || port > 65535) throw new SettingsError(key, `"${item}" is not host:port (IPv6 as [addr]:port)`);
    out.push({ host: m[1], port });
  }
  return out;
}

function yesNo(src: Source, key: string): boolean {
  const v = val(src, key)?.toLowerCase();
  if (v === undefined) return false;
  if (['yes', 'true', '1', 'on'].includes(v)) return true;
  if (['no', 'false', '0', 'off'].includes(v)) return false;
  throw new SettingsError(key, `expected yes or no, got "${v}"`);
}

function port(src: Source, key: string, dflt: number): number {
  const v = val(src, key);
  if (v === undefined) return dflt;
  if (!/^\d{1,5}$/.test(v) || Number(v) < 1 || Number(v) > 65535) throw new SettingsError(key, `expected a port 1-65535, got "${v}"`);
  return Number(v);
}

export function loadDnsSettings(src: Source): DnsSettings {
  const cloudflareApiUrl = (val(src, 'MAILSVC_CLOUDFLARE_API_URL') ?? 'https://api.cloudflare.com/client/v4').replace(/\/+$/, '');
  if (!/^https:\/\/[^/\s]+/.test(cloudflareApiUrl)) throw new SettingsError('MAILSVC_CLOUDFLARE_API_URL', 'must be an https:// URL');
  const srsDomain = val(src, 'MAILSVC_SRS_DOMAIN')?.toLowerCase();
  if (srsDomain !== undefined && !/^(?=.{1,253}$)([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z0-9-]{2,63}$/.test(srsDomain)) {
    throw new SettingsError('MAILSVC_SRS_DOMAIN', `"${srsDomain}" is not a domain name`);
  }
  return Object.freeze({
    resolvers: parseServers('MAILSVC_DNS_RESOLVER', val(src, 'MAILSVC_DNS_RESOLVER')),
    authoritative: parseServers('MAILSVC_DNS_AUTHORITATIVE', val(src, 'MAILSVC_DNS_AUTHORITATIVE')),
    cloudflareApiUrl,
    srsDomain,
    enableSrs: yesNo(src, 'MAILSVC_ENABLE_SRS'),
    enableDeliverabilityTimer: yesNo(src, 'MAILSVC_ENABLE_DELIVERABILITY_TIMER'),
    dkimEd25519: yesNo(src, 'MAILSVC_DKIM_ED25519'),
    postsrsdDefaults: val(src, 'MAILSVC_POSTSRSD_DEFAULTS') ?? '/etc/default/postsrsd',
    postsrsdForward: parseServers('MAILSVC_POSTSRSD_FORWARD', val(src, 'MAILSVC_POSTSRSD_FORWARD') ?? '127.0.0.1:10001')[0] ?? { host: '127.0.0.1', port: 10001 },
    deliverabilityHttpsPort: port(src, 'MAILSVC_DELIVERABILITY_HTTPS_PORT', 443),
    deliverabilitySmtpPort: port(src, 'MAILSVC_DELIVERABILITY_SMTP_PORT', 25),
  });
}
