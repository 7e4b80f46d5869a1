import ipaddr from 'ipaddr.js';

/** An address or a network in canonical text (`203.0.113.5`, `2001:db8::/64`), with what is needed to compare it. */
export type IpNet = { text: string; addr: ipaddr.IPv4 | ipaddr.IPv6; bits: number; kind: 'ipv4' | 'ipv6'; single: boolean };

const MAX_BITS: Record<'ipv4' | 'ipv6', number> = { ipv4: 32, ipv6: 128 };

/** An IPv4-mapped IPv6 address (`::ffff:1.2.3.4`) is its IPv4 address. */
function plain(a: ipaddr.IPv4 | ipaddr.IPv6): ipaddr.IPv4 | ipaddr.IPv6 {
  return a.kind() === 'ipv6' && (a as ipaddr.IPv6).isIPv4MappedAddress() ? (a as ipaddr.IPv6).toIPv4Address() : a;
}

/**
 * Parses an address or a CIDR network; null when it is neither. Strict: the
 * four-part dotted IPv4 form only (no `1.2.3`, no octal), no zone id, and a
 * network must be written at its base address (`10.0.0.0/24`, not `10.0.0.7/24`).
 */
export function parseIpNet(raw: string): IpNet | null {
  const s = raw.trim();
  if (s === '' || s.length > 64 || /[^0-9a-fA-F:./]/.test(s)) return null;
  const [host = '', len, extra] = s.split('/');
  if (extra !== undefined) return null;
  const v4 = /^\d{1,3}(\.\d{1,3}){3}$/.test(host);
  if (!v4 && !host.includes(':')) return null;
  if (v4 && !ipaddr.IPv4.isValidFourPartDecimal(host)) return null;
  if (!ipaddr.isValid(host)) return null;
  const parsed = ipaddr.parse(host);
  const addr = plain(parsed);
  // A mapped IPv4 address is accepted alone, never as the base of a network.
  if (len !== undefined && addr !== parsed) return null;
  const kind = addr.kind() as 'ipv4' | 'ipv6';
  const max = MAX_BITS[kind];
  let bits = max;
  if (len !== undefined) {
    if (!/^\d{1,3}$/.test(len)) return null;
    bits = Number(len);
    if (bits > max || networkBase(addr, bits) !== addr.toString()) return null;
  }
  const single = bits === max;
  return { text: single ? addr.toString() : `${addr.toString()}/${bits}`, addr, bits, kind, single };
}

function networkBase(addr: ipaddr.IPv4 | ipaddr.IPv6, bits: number): string {
  return addr.kind() === 'ipv4' ? ipaddr.IPv4.networkAddressFromCIDR(`${addr.toString()}/${bits}`).toString() : ipaddr.IPv6.networkAddressFromCIDR(`${addr.toString()}/${bits}`).toString();
}

function sameNet(a: ipaddr.IPv4 | ipaddr.IPv6, b: ipaddr.IPv4 | ipaddr.IPv6, bits: number): boolean {
  return a.kind() === b.kind() && (a as ipaddr.IPv4).match(b as ipaddr.IPv4, bits);
}

/** True when the two address sets share any address (one holds the other). */
export function overlaps(a: IpNet, b: IpNet): boolean {
  return a.kind === b.kind && sameNet(a.addr, b.addr, Math.min(a.bits, b.bits));
}

/** Loose parse of what another program printed (fail2ban's `ignoreip`, `ip -j addr`): any address or CIDR, base or not. */
export function parseLooseNet(raw: string): IpNet | null {
  const s = raw.trim();
  const [host = '', len] = s.split('/');
  if (!ipaddr.isValid(host)) return null;
  const addr = plain(ipaddr.parse(host));
  const kind = addr.kind() as 'ipv4' | 'ipv6';
  const max = MAX_BITS[kind];
  const bits = len === undefined ? max : Number(len);
  if (!Number.isInteger(bits) || bits < 0 || bits > max) return null;
  return { text: bits === max ? addr.toString() : `${addr.toString()}/${bits}`, addr, bits, kind, single: bits === max };
}
