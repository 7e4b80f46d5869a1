/**
 * Which addresses an outgoing call (an SMS provider's base_url) may reach.
 *
 * Only public unicast addresses are allowed, in every spelling, unless the
 * URL's `host:port` is listed in MAILSVC_OUTBOUND_ALLOW_HOSTS (an in-house
 * gateway, tests). `checkPublicHttpsUrl` is the configuration-time check;
 * `evaluateOutboundUrl` is shared with the connect-time check of
 * pinned-request.ts, which pins the connection to the addresses judged here.
 */
import { promises as dns } from 'node:dns';
import { isIPv4, isIPv6 } from 'node:net';
import ipaddr from 'ipaddr.js';

/** Entries are lowercase `host:port` (IPv6 as `[::1]:8443`). */
export type OutboundPolicy = { allowHosts: readonly string[] };

export type Resolver = (host: string) => Promise<string[]>;

export const defaultResolver: Resolver = async (host) => {
  const found = await dns.lookup(host, { all: true, verbatim: true });
  return found.map((a) => a.address);
};

/** 2000::/3 holds every global unicast IPv6 assignment. */
const GLOBAL_UNICAST_V6 = ipaddr.IPv6.parseCIDR('2000::/3');

function isPublicV4(addr: ipaddr.IPv4): boolean {
  return addr.range() === 'unicast';
}

/**
 * True only for a public unicast address. IPv4-mapped IPv6 is judged as the
 * IPv4 it carries; every other special IPv6 range (NAT64, 6to4, Teredo, ULA,
 * link-local, IPv4-compatible `::a.b.c.d`, ...) is refused. Unparseable → false.
 */
export function isPublicAddress(ip: string): boolean {
  try {
    if (isIPv4(ip)) return isPublicV4(ipaddr.IPv4.parse(ip));
    if (!isIPv6(ip) || ip.includes('%')) return false;
    // Canonicalise through WHATWG URL first: ipaddr.js reads `::1.2.3.4` as
    // `::ffff:1.2.3.4`, while it really is the IPv4-compatible `::102:304`.
    const canonical = new URL(`https://[${ip}]/`).hostname.slice(1, -1);
    const addr = ipaddr.IPv6.parse(canonical);
    if (addr.isIPv4MappedAddress()) return isPublicV4(addr.toIPv4Address());
    return addr.range() === 'unicast' && addr.match(GLOBAL_UNICAST_V6);
  } catch {
    return false;
  }
}

export type UrlCheck = { ok: true; url: URL } | { ok: false; reason: string };

export type UrlEvaluation =
  | {
      ok: true;
      url: URL;
      /** Host without IPv6 brackets. */
      host: string;
      /** Whether the host is an IP literal (no lookup needed). */
      literal: boolean;
      allowListed: boolean;
      /** Addresses that were judged (or, when allow-listed, resolved); null when not resolved. */
      addresses: string[] | null;
    }
  | { ok: false; reason: string };

const refuse = (reason: string): { ok: false; reason: string } => ({ ok: false, reason });

function isLocalhostName(host: string): boolean {
  const h = host.replace(/\.$/, '');
  return h === 'localhost' || h.endsWith('.localhost');
}

/**
 * A host name as DNS knows it: labels of 1-63 letters, digits, `-` or `_`, at
 * most 253 characters, one optional trailing dot (a fully qualified name), and
 * not an all-digit last label. Refuses spellings such as `127.0.0.1..` or
 * `localhost..`, which the URL parser keeps as names while resolvers and HTTP
 * clients read them in their own ways.
 */
export function isDnsName(host: string): boolean {
  const name = host.endsWith('.') ? host.slice(0, -1) : host;
  if (name.length === 0 || name.length > 253) return false;
  const labels = name.split('.');
  if (!labels.every((l) => /^[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?$/.test(l))) return false;
  return !/^\d+$/.test(labels[labels.length - 1] ?? '');
}

function hostKey(url: URL): string {
  return `${url.hostname}:${url.port || '443'}`;
}

export function isAllowListed(url: URL, policy: OutboundPolicy): boolean {
  const key = hostKey(url);
  return policy.allowHosts.some((entry) => entry.trim().toLowerCase() === key);
}

/**
 * The one evaluation behind both checks. In 'check' mode an allow-listed host
 * is not resolved and a failed lookup passes (the connect-time check guards
 * it). In 'connect' mode names are always resolved once and a failed lookup
 * throws the resolver's error.
 */
export async function evaluateOutboundUrl(
  raw: string,
  policy: OutboundPolicy,
  resolve: Resolver,
  mode: 'check' | 'connect',
): Promise<UrlEvaluation> {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return refuse('not a valid URL');
  }
  if (url.protocol !== 'https:') return refuse('must use https');
  if (url.username !== '' || url.password !== '') return refuse('must not contain credentials');
  if (url.search !== '' || url.hash !== '' || url.href.includes('?') || url.href.includes('#')) {
    return refuse('must not have a query or fragment');
  }
  if (url.hostname === '') return refuse('not a valid URL');

  const allowListed = isAllowListed(url, policy);
  const bracketed = url.hostname.startsWith('[');
  const host = bracketed ? url.hostname.slice(1, -1) : url.hostname;
  const literal = bracketed || isIPv4(host);

  if (literal) {
    if (!allowListed && !isPublicAddress(host)) return refuse('host is a private or reserved address');
    return { ok: true, url, host, literal, allowListed, addresses: [host] };
  }
  if (!isDnsName(host)) return refuse('host is not a valid DNS name');
  if (allowListed && mode === 'check') return { ok: true, url, host, literal, allowListed, addresses: null };
  if (!allowListed && isLocalhostName(host)) return refuse('host is a private or reserved address');

  let addresses: string[];
  try {
    addresses = await resolve(host);
  } catch (err) {
    if (mode === 'check') return { ok: true, url, host, literal, allowListed, addresses: null };
    throw err;
  }
  if (addresses.length === 0) {
    if (mode === 'check') return { ok: true, url, host, literal, allowListed, addresses: null };
    return refuse('host does not resolve');
  }
  if (!allowListed && !addresses.every(isPublicAddress)) {
    return refuse('host resolves to a private or reserved address');
  }
  return { ok: true, url, host, literal, allowListed, addresses };
}

/**
 * Configuration-time check of an outgoing https base URL. A name that does not
 * resolve here passes; the connect-time check in pinned-request.ts refuses it
 * if it later resolves to a private address.
 */
export async function checkPublicHttpsUrl(
  raw: string,
  policy: OutboundPolicy,
  resolve: Resolver = defaultResolver,
): Promise<UrlCheck> {
  const result = await evaluateOutboundUrl(raw, policy, resolve, 'check');
  return result.ok ? { ok: true, url: result.url } : result;
}
