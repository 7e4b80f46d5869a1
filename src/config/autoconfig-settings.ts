import { hostname } from 'node:os';
import { isAbsolute, join } from 'node:path';
import { SettingsError } from './settings-error.js';

/** What mail clients are told (docs/mail-clients.md). */
export type AutoconfigSettings = Readonly<{
  /**
   * MAILSVC_MAIL_HOST: the name clients connect to for IMAP and submission
   * (the name on the daemons' certificate). Default: this host's name when it
   * is fully qualified; otherwise undefined, and the answers say to set it.
   */
  mailHost: string | undefined;
  /** MAILSVC_POSTFIX_MASTER_CF: the master.cf whose submission services are offered (default: the one mailsvc ships, deploy/postfix/master.cf.submission). */
  postfixMasterCf: string;
  /** MAILSVC_DOVECOT_LISTENERS_CONF: the Dovecot file with the IMAP/POP3 listeners (default: deploy/dovecot/conf.d/13-mailsvc-listeners.conf). */
  dovecotListeners: string;
  /** MAILSVC_AUTOCONFIG_PER_MINUTE: answers per client address per minute on the public autoconfiguration routes. */
  perMinute: number;
}>;

type Source = Record<string, string | undefined>;
const val = (src: Source, key: string): string | undefined => (src[key] === undefined || src[key] === '' ? undefined : src[key]);
const HOST = /^(?=.{1,253}$)([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z]([a-z0-9-]{0,61}[a-z0-9])?$/i;

function path(src: Source, key: string, dflt: string): string {
  const v = val(src, key) ?? dflt;
  if (!isAbsolute(v)) throw new SettingsError(key, `must be an absolute path, got "${v.slice(0, 80)}"`);
  return v;
}

export function loadAutoconfigSettings(src: Source, packageRoot: string): AutoconfigSettings {
  const given = val(src, 'MAILSVC_MAIL_HOST')?.toLowerCase().replace(/\.$/, '');
  const own = hostname().toLowerCase();
  const mailHost = given ?? (HOST.test(own) ? own : undefined);
  if (mailHost !== undefined && !HOST.test(mailHost)) {
    throw new SettingsError('MAILSVC_MAIL_HOST', `"${mailHost.slice(0, 80)}" is not a fully qualified host name: set MAILSVC_MAIL_HOST to the name mail clients connect to (e.g. mail.example.org)`);
  }
  const per = val(src, 'MAILSVC_AUTOCONFIG_PER_MINUTE') ?? '30';
  const perMinute = /^\d{1,6}$/.test(per) ? Number(per) : NaN;
  if (!(perMinute >= 1 && perMinute <= 100_000)) throw new SettingsError('MAILSVC_AUTOCONFIG_PER_MINUTE', `must be a whole number from 1 to 100000, got "${per.slice(0, 40)}"`);
  return Object.freeze({
    mailHost,
    postfixMasterCf: path(src, 'MAILSVC_POSTFIX_MASTER_CF', join(packageRoot, 'deploy', 'postfix', 'master.cf.submission')),
    dovecotListeners: path(src, 'MAILSVC_DOVECOT_LISTENERS_CONF', join(packageRoot, 'deploy', 'dovecot', 'conf.d', '13-mailsvc-listeners.conf')),
    perMinute,
  });
}
