import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import ipaddr from 'ipaddr.js';
import { MAX_SEND_RATE, WINDOWS, sendRateSetting } from '../shared/send-rate.js';
import type { Limits } from '../shared/send-rate.js';
import type { SocketAddress } from '../shared/socket-listen.js';
import { SettingsError } from './settings-error.js';

export type MailSettings = Readonly<{
  sendRateDefaults: Limits;
  /**
   * Postfix policy service: a loopback TCP address, or a Unix socket (mode 0660,
   * group `socketGroup`) only Postfix can reach. null = off.
   */
  policyListen: PolicyListen | null;
  /** Connections the policy service holds at most. */
  policyMaxConnections: number;
  /**
   * Postfix's lookup tables (domains, mailboxes, aliases, sender logins) served
   * over the socketmap protocol, so Postfix needs no access to the database:
   * a Unix socket (mode 0660, group `socketGroup`) or a loopback port. null = off.
   */
  mapsListen: SocketListen | null;
  /** Unix socket of the Dovecot auth hook; null = off. */
  authHookSocket: string | null;
  /** Group given the hook socket (mode 0660), so Dovecot's auth workers can connect: a name or a gid. */
  authHookSocketGroup: number | null;
  /** Optional loopback TCP address of the auth hook. */
  authHookListen: { host: string; port: number } | null;
  /** Connections each auth-hook listener holds at most. */
  authHookMaxConnections: number;
}>;

/** A loopback TCP address, or a Unix socket given a group. */
export type SocketListen = SocketAddress;
export type PolicyListen = SocketListen;

type Source = Record<string, string | undefined>;
const val = (src: Source, key: string): string | undefined => (src[key] === undefined || src[key] === '' ? undefined : src[key]);

/** A loopback `host:port` or off; `example` is what the error names (with `unix:` where that is allowed too). */
function loopback(src: Source, key: string, dflt: string | null, example = '127.0.0.1:10031'): { host: string; port: number } | null {
  const raw = val(src, key) ?? dflt;
  if (raw === null || raw === 'off') return null;
  const m = /^\[?([^\]]+?)\]?:(\d{1,5})$/.exec(raw);
  const host = m?.[1] ?? '';
  const port = Number(m?.[2] ?? -1);
  if (!m || port > 65535 || !ipaddr.isValid(host) || ipaddr.process(host).range() !== 'loopback') {
    throw new SettingsError(key, `must be a loopback host:port such as ${example}, or off`);
  }
  return { host, port };
}

function rate(src: Source, key: string): number {
  const v = val(src, key);
  if (v === undefined) return 0;
  if (!/^\d+$/.test(v) || Number(v) > MAX_SEND_RATE) throw new SettingsError(key, `must be a whole number from 0 (no limit) to ${MAX_SEND_RATE}`);
  return Number(v);
}

export function groupId(src: Source, key: string): number | null {
  const v = val(src, key);
  if (v === undefined) return null;
  if (/^\d+$/.test(v)) return Number(v);
  const line = (existsSync('/etc/group') ? readFileSync('/etc/group', 'utf8') : '').split('\n').find((l) => l.split(':')[0] === v);
  const gid = line?.split(':')[2];
  if (gid === undefined || !/^\d+$/.test(gid)) throw new SettingsError(key, `no group "${v}" on this host (Debian's Dovecot: dovecot; Postfix: postfix)`);
  return Number(gid);
}

function count(src: Source, key: string, dflt: number): number {
  const v = val(src, key);
  if (v === undefined) return dflt;
  if (!/^\d+$/.test(v) || Number(v) < 1 || Number(v) > 100_000) throw new SettingsError(key, 'must be a whole number from 1 to 100000');
  return Number(v);
}

/** `unix:/path` (its group from `groupKey`), a loopback `host:port`, or off; the examples are what errors name. */
function socketListen(src: Source, key: string, groupKey: string, dflt: string | null, examples: { tcp: string; unix: string }): SocketListen | null {
  const raw = val(src, key);
  if (raw?.startsWith('unix:')) {
    const path = raw.slice('unix:'.length);
    if (!path.startsWith('/')) throw new SettingsError(key, `unix: needs an absolute path, such as ${examples.unix}`);
    return { path, socketGroup: groupId(src, groupKey) };
  }
  return loopback(src, key, dflt, `${examples.tcp}, ${examples.unix}`);
}

/** Where an installed host's hook listens unless MAILSVC_MAIL_AUTH_SOCKET says otherwise: where Dovecot's Lua passdb (deploy/dovecot) looks. */
export const INSTALLED_AUTH_SOCKET = '/run/mailsvc/auth-hook.sock';

/** `installed`: a release on a host (the hook in /run/mailsvc); a checkout keeps it in its data directory. */
export function loadMailSettings(src: Source, dataDir: string, layout: 'checkout' | 'installed' = 'checkout'): MailSettings {
  const socket = val(src, 'MAILSVC_MAIL_AUTH_SOCKET') ?? (layout === 'installed' ? INSTALLED_AUTH_SOCKET : join(dataDir, 'auth-hook.sock'));
  return Object.freeze({
    sendRateDefaults: Object.fromEntries(WINDOWS.map((w) => [w, rate(src, sendRateSetting(w))])) as Limits,
    policyListen: socketListen(src, 'MAILSVC_POLICY_LISTEN', 'MAILSVC_POLICY_SOCKET_GROUP', '127.0.0.1:10031', { tcp: '127.0.0.1:10031', unix: 'unix:/var/spool/postfix/mailsvc/policy' }),
    policyMaxConnections: count(src, 'MAILSVC_POLICY_MAX_CONNECTIONS', 200),
    mapsListen: socketListen(src, 'MAILSVC_MAPS_LISTEN', 'MAILSVC_MAPS_SOCKET_GROUP', null, { tcp: '127.0.0.1:10032', unix: 'unix:/var/spool/postfix/mailsvc/maps' }),
    authHookSocket: socket === 'off' ? null : socket,
    authHookSocketGroup: groupId(src, 'MAILSVC_MAIL_AUTH_SOCKET_GROUP'),
    authHookListen: loopback(src, 'MAILSVC_MAIL_AUTH_LISTEN', null),
    authHookMaxConnections: count(src, 'MAILSVC_MAIL_AUTH_MAX_CONNECTIONS', 200),
  });
}
