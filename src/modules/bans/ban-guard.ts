import { networkInterfaces } from 'node:os';
import { overlaps, parseLooseNet } from '../../shared/ip-net.js';
import type { IpNet } from '../../shared/ip-net.js';

/** One set of addresses a ban must never reach, and why (a predicate: `is loopback`). */
export type Protected = { net: string; why: string };

const LOOPBACK: Protected[] = [
  { net: '127.0.0.0/8', why: 'is loopback' },
  { net: '::1', why: 'is loopback' },
  { net: '0.0.0.0', why: 'is the unspecified address' },
  { net: '::', why: 'is the unspecified address' },
];

/** Every address of this host's interfaces. */
export function hostAddresses(): Protected[] {
  return Object.entries(networkInterfaces()).flatMap(([name, list]) =>
    (list ?? []).map((a) => ({ net: a.address.replace(/%.*$/, ''), why: `is an address of this host (interface ${name})` })),
  );
}

export type GuardInput = {
  trustedProxies: readonly string[];
  ignoreIp: readonly string[];
  caller: string | null;
  host: readonly Protected[];
};

/**
 * Why a ban of `net` must not happen, or null. Refused: loopback, the host's
 * own addresses, MAILSVC_TRUSTED_PROXIES, fail2ban's ignoreip, and the
 * calling administrator's address — each also when the ban is a network that
 * holds it, or an address inside it.
 */
export function whyRefused(net: IpNet, input: GuardInput): string | null {
  const entries: Protected[] = [
    ...(input.caller ? [{ net: input.caller, why: 'is the address you are calling from (the ban would lock you out)' }] : []),
    ...LOOPBACK,
    ...input.host,
    ...input.trustedProxies.map((p) => ({ net: p, why: 'is a trusted proxy (MAILSVC_TRUSTED_PROXIES)' })),
    ...input.ignoreIp.map((p) => ({ net: p, why: "is in fail2ban's ignoreip (fail2ban never bans it)" })),
  ];
  for (const e of entries) {
    const p = parseLooseNet(e.net);
    if (p && overlaps(net, p)) return `cannot ban ${net.text}: ${p.text} ${e.why}`;
  }
  return null;
}
