import { isAbsolute } from 'node:path';
import { FAIL2BAN_JAILS } from '../shared/limit-keys.js';
import type { Fail2banJail } from '../shared/limit-keys.js';
import { SettingsError } from './settings-error.js';

/** How `limits apply` renders the fail2ban jails mailsvc owns (jail.d/mailsvc-<jail>.local). */
export type JailSettings = Readonly<{
  /** MAILSVC_FAIL2BAN_JAILS: the jails to enable (default: all seven); the others are rendered `enabled = false`. */
  enabled: readonly Fail2banJail[];
  /** MAILSVC_FAIL2BAN_BANTIME_INCREMENT: `bantime.increment` (each repeat ban lasts longer), default yes. */
  bantimeIncrement: boolean;
  /** MAILSVC_MAIL_LOG: Postfix's log; the postfix, postfix-sasl and dovecot jails read it when it exists, the journal otherwise (always with the value `journal`). */
  mailLog: string;
  /** MAILSVC_NGINX_ERROR_LOG: what the nginx-http-auth jail reads. */
  nginxErrorLog: string;
}>;

type Source = Record<string, string | undefined>;
const val = (src: Source, key: string): string | undefined => (src[key] === undefined || src[key] === '' ? undefined : src[key]);

function path(src: Source, key: string, dflt: string): string {
  const v = val(src, key) ?? dflt;
  if (!isAbsolute(v)) throw new SettingsError(key, `must be an absolute path, got "${v}"`);
  return v;
}

export function loadJailSettings(src: Source): JailSettings {
  const raw = val(src, 'MAILSVC_FAIL2BAN_JAILS');
  const names = raw === undefined ? [...FAIL2BAN_JAILS] : raw.split(/[\s,]+/).filter(Boolean);
  for (const n of names) {
    if (!(FAIL2BAN_JAILS as readonly string[]).includes(n)) throw new SettingsError('MAILSVC_FAIL2BAN_JAILS', `"${n}" is not a jail mailsvc manages (${FAIL2BAN_JAILS.join(', ')})`);
  }
  const inc = (val(src, 'MAILSVC_FAIL2BAN_BANTIME_INCREMENT') ?? 'yes').toLowerCase();
  if (!['yes', 'no'].includes(inc)) throw new SettingsError('MAILSVC_FAIL2BAN_BANTIME_INCREMENT', `expected yes or no, got "${inc}"`);
  return Object.freeze({
    enabled: Object.freeze(names as Fail2banJail[]),
    bantimeIncrement: inc === 'yes',
    mailLog: val(src, 'MAILSVC_MAIL_LOG') === 'journal' ? 'journal' : path(src, 'MAILSVC_MAIL_LOG', '/var/log/mail.log'),
    nginxErrorLog: path(src, 'MAILSVC_NGINX_ERROR_LOG', '/var/log/nginx/error.log'),
  });
}
