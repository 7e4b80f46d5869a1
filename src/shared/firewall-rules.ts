import { AppError } from './errors.js';
import { parseIpNet } from './ip-net.js';
import type { IpNet } from './ip-net.js';

/** One rule as stored and answered. */
export type FirewallRule = { ports: string; protocol: 'tcp' | 'udp'; source: string; enabled: 'yes' | 'no' };
export type FirewallState = { 'firewall-enabled': 'yes' | 'no'; 'firewall-rules-json': FirewallRule[] };

export const PORT_GROUPS: Readonly<Record<string, readonly number[]>> = {
  mail: [25, 465, 587, 110, 995, 143, 993, 4190],
  web: [80, 443],
  ssh: [22],
};

const invalid = (path: string, message: string): AppError => new AppError('validation', `${path}: ${message}`, { errors: [{ path, message }] });

/** `ports`: space-separated ports, ranges (`8000-8100`) and groups; the ranges as [from, to]. */
export function parsePorts(text: string, path: string): [number, number][] {
  const items = text.trim().split(/\s+/).filter((x) => x !== '');
  if (items.length === 0) throw invalid(path, 'give at least one port, range (8000-8100) or group (mail, web, ssh)');
  if (items.length > 64) throw invalid(path, 'at most 64 items');
  const port = (s: string): number => {
    const n = Number(s);
    if (!/^\d{1,5}$/.test(s) || n < 1 || n > 65535) throw invalid(path, `"${s.slice(0, 20)}" is not a port from 1 to 65535, a range or a group (mail, web, ssh)`);
    return n;
  };
  return items.flatMap((item): [number, number][] => {
    const group = PORT_GROUPS[item.toLowerCase()];
    if (group) return group.map((p) => [p, p]);
    const m = /^(\d+)-(\d+)$/.exec(item);
    if (m) {
      const [a, b] = [port(m[1] ?? ''), port(m[2] ?? '')];
      if (a >= b) throw invalid(path, `range ${item} must go from a lower to a higher port`);
      return [[a, b]];
    }
    const p = port(item);
    return [[p, p]];
  });
}

/** A rule from the API or the CLI, checked field by field; errors name `firewall-rules-json[i].field`. */
export function parseRules(raw: unknown): FirewallRule[] {
  if (!Array.isArray(raw)) throw invalid('firewall-rules-json', 'must be a JSON array of {ports, protocol, source, enabled}');
  if (raw.length > 256) throw invalid('firewall-rules-json', 'at most 256 rules');
  return raw.map((r: unknown, i): FirewallRule => {
    const at = `firewall-rules-json[${i}]`;
    if (typeof r !== 'object' || r === null || Array.isArray(r)) throw invalid(at, 'must be an object {ports, protocol, source, enabled}');
    const o = r as Record<string, unknown>;
    const extra = Object.keys(o).find((k) => !['ports', 'protocol', 'source', 'enabled'].includes(k));
    if (extra) throw invalid(`${at}.${extra.slice(0, 40)}`, 'is not a rule field (ports, protocol, source, enabled)');
    if (typeof o.ports !== 'string') throw invalid(`${at}.ports`, 'must be a string');
    parsePorts(o.ports, `${at}.ports`);
    if (o.protocol !== 'tcp' && o.protocol !== 'udp') throw invalid(`${at}.protocol`, 'must be tcp or udp');
    const source = o.source === undefined ? '' : o.source;
    if (typeof source !== 'string') throw invalid(`${at}.source`, 'must be a string');
    let src = '';
    if (source.trim() !== '') {
      const net = parseIpNet(source);
      if (!net) throw invalid(`${at}.source`, 'must be an IP address or a CIDR network at its base address, or empty for any');
      src = net.text;
    }
    const enabled = o.enabled === undefined ? 'yes' : o.enabled;
    if (enabled !== 'yes' && enabled !== 'no') throw invalid(`${at}.enabled`, 'must be yes or no');
    return { ports: o.ports.trim().split(/\s+/).join(' '), protocol: o.protocol, source: src, enabled };
  });
}

const STATE_KEYS = ['firewall-enabled', 'firewall-rules-json'] as const;

/**
 * A whole firewall state (`{"firewall-enabled":"yes"|"no","firewall-rules-json":[…]}`)
 * checked with the validators the API uses: both keys are required, any other
 * key is refused; the rules come back in canonical form. The privileged helper
 * takes exactly this, and renders the nftables file itself from it.
 */
export function parseFirewallState(raw: unknown): FirewallState {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) throw invalid('state', 'must be a JSON object {"firewall-enabled", "firewall-rules-json"}');
  const o = raw as Record<string, unknown>;
  const extra = Object.keys(o).find((k) => !(STATE_KEYS as readonly string[]).includes(k));
  if (extra !== undefined) throw invalid(extra.slice(0, 40), 'is not a firewall setting (firewall-enabled, firewall-rules-json)');
  const enabled = o['firewall-enabled'];
  if (enabled !== 'yes' && enabled !== 'no') throw invalid('firewall-enabled', 'must be yes or no');
  if (!('firewall-rules-json' in o)) throw invalid('firewall-rules-json', 'is missing');
  return { 'firewall-enabled': enabled, 'firewall-rules-json': parseRules(o['firewall-rules-json']) };
}

/** True when some enabled rule lets `from` open `port`/`protocol`. */
export function allows(rules: readonly FirewallRule[], from: IpNet, port: number, protocol: 'tcp' | 'udp'): boolean {
  return rules.some((r) => {
    if (r.enabled !== 'yes' || r.protocol !== protocol) return false;
    if (!parsePorts(r.ports, 'ports').some(([a, b]) => port >= a && port <= b)) return false;
    if (r.source === '') return true;
    const net = parseIpNet(r.source);
    return net !== null && net.kind === from.kind && (from.addr as { match(a: unknown, bits: number): boolean }).match(net.addr, net.bits);
  });
}

/**
 * The ONE file that replaces mailsvc's table atomically. Its first two lines
 * make sure the table exists and then delete it (the idiom that works on
 * every nft version, where `destroy table` needs 1.0.8), so `nft -f` either
 * swaps the whole table or changes nothing. Disabled: only those two lines.
 *
 * The table's input chain (priority filter, policy drop) accepts
 * established/related traffic, loopback, ICMP/ICMPv6, and new connections to
 * the listed ports from the listed sources; every other new inbound
 * connection is dropped. It filters nothing outbound or forwarded.
 */
export function compileRuleset(table: string, state: FirewallState): string {
  const head = [`table ${table} {}`, `delete table ${table}`];
  if (state['firewall-enabled'] !== 'yes') return head.join('\n') + '\n';
  const family = table.split(' ')[0];
  const lines: string[] = [];
  for (const r of state['firewall-rules-json']) {
    if (r.enabled !== 'yes') continue;
    const ports = parsePorts(r.ports, 'ports').map(([a, b]) => (a === b ? String(a) : `${a}-${b}`));
    const set = [...new Set(ports)].join(', ');
    let match = '';
    if (r.source !== '') {
      const net = parseIpNet(r.source);
      if (!net) continue;
      if ((family === 'ip' && net.kind === 'ipv6') || (family === 'ip6' && net.kind === 'ipv4')) continue;
      match = `${net.kind === 'ipv4' ? 'ip' : 'ip6'} saddr ${net.text} `;
    }
    lines.push(`\t\t${match}${r.protocol} dport { ${set} } accept`);
  }
  return [
    ...head,
    `table ${table} {`,
    '\tchain input {',
    '\t\ttype filter hook input priority filter; policy drop;',
    '\t\tct state established,related accept',
    '\t\tct state invalid drop',
    '\t\tiifname "lo" accept',
    '\t\tmeta l4proto { icmp, ipv6-icmp } accept',
    ...lines,
    '\t}',
    '}',
    '',
  ].join('\n');
}
