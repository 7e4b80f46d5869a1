import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import ipaddr from 'ipaddr.js';
import { MAX_SEND_RATE, WINDOWS, sendRateSetting } from '../shared/send-rate.js';
import type { Limits } from '../shared/send-rate.js';
import { SettingsError } from './settings-error.js';

export type MailSettings = Readonly<{
  sendRateDefaults: Limits;
  /** Postfix policy service; loopback only (it has no authentication). null = off. */
  policyListen: { host: string; port: number } | null;
  /** Unix socket of the Dovecot auth hook; null = off. */
  authHookSocket: string | null;
  /** Group given the hook socket (mode 0660), so Dovecot's auth workers can connect: a name or a gid. */
  authHookSocketGroup: number | null;
  /** Optional loopback TCP address of the auth hook. */
  authHookListen: { host: string; port: number } | null;
}>;

type Source = Record<string, string | undefined>;
const val = (src: Source, key: string): string | undefined => (src[key] === undefined || src[key] === '' ? undefined : src[key]);

function loopback(src: Source, key: string, dflt: string | null): { host: string; port: number } | null {
  const raw = val(src, key) ?? dflt;
  if (raw === null || raw === 'off') return null;
  const m = /^\[?([^\]]+?)\]?:(\d{1,5})$/.exec(raw);
  const host = m?.[1] ?? '';
  const port = Number(m?.[2] ?? -1);
  if (!m || port > 65535 || !ipaddr.isValid(host) || ipaddr.process(host).range() !== 'loopback') {
    throw new SettingsError(key, `must be a loopback host:port such as 127.0.0.1:10031, or off`);
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
  if (gid === undefined || !/^\d+$/.test(gid)) throw new SettingsError(key, `no group "${v}" on this host (for Debian's Dovecot: dovecot)`);
  return Number(gid);
}

export function loadMailSettings(src: Source, dataDir: string): MailSettings {
  const socket = val(src, 'MAILSVC_MAIL_AUTH_SOCKET') ?? join(dataDir, 'auth-hook.sock');
  return Object.freeze({
    sendRateDefaults: Object.fromEntries(WINDOWS.map((w) => [w, rate(src, sendRateSetting(w))])) as Limits,
    policyListen: loopback(src, 'MAILSVC_POLICY_LISTEN', '127.0.0.1:10031'),
    authHookSocket: socket === 'off' ? null : socket,
    authHookSocketGroup: groupId(src, 'MAILSVC_MAIL_AUTH_SOCKET_GROUP'),
    authHookListen: loopback(src, 'MAILSVC_MAIL_AUTH_LISTEN', null),
  });
}
