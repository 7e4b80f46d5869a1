import { dirname, isAbsolute, join } from 'node:path';
import { groupId } from './mail-settings.js';
import { SettingsError } from './settings-error.js';
import { loadJailSettings } from './jail-settings.js';
import type { JailSettings } from './jail-settings.js';

/** How this process reaches the privileged helper. */
export type HelperEndpoint = { mode: 'direct' } | { mode: 'unix'; path: string };

export type HelperSettings = Readonly<{
  endpoint: HelperEndpoint;
  /** Group given the socket when `mailsvc helper serve` creates it itself (under systemd, SocketGroup= does it). */
  socketGroup: number | null;
  /** The helper's own view of the daemons: never taken from a caller. */
  doveadm: string;
  dovecotConfig: string | undefined;
  postfixConfigDir: string;
  fail2banSocket: string;
  fail2banConfigDir: string;
  /** Rspamd's local.d (its parent holds override.d too). */
  rspamdLocalDir: string;
  /** MAILSVC_RSPAMD_GROUP (default `_rspamd`, Debian's): the group given the DKIM key files (0640), so Rspamd reads them and no other user does. A name or a gid, looked up when a key is installed. */
  rspamdGroup: string;
  /** MAILSVC_POSTSRSD_DEFAULTS: postsrsd's settings file, where `srs-domains-apply` sets SRS_EXCLUDE_DOMAINS (Debian: /etc/default/postsrsd). */
  postsrsdDefaults: string;
  /** MAILSVC_NFT_TABLE: the one nftables table mailsvc owns, `<family> <name>`; the helper applies no file that names another. */
  nftTable: string;
  /** The fail2ban jails `apply-limits` renders (MAILSVC_FAIL2BAN_JAILS, MAILSVC_MAIL_LOG …). */
  jails: JailSettings;
  /** MAILSVC_AUTH_LOG (default `<MAILSVC_DATA_DIR>/auth.log`): what the mailsvc-auth jail reads. */
  authLog: string;
  /**
   * MAILSVC_SERVICE_MANAGER: a program run instead of `systemctl` for the
   * mailsvc units (`<program> restart mailsvc.service`); tests give their own
   * process manager. Unset: systemctl.
   */
  serviceManager: string | undefined;
  /**
   * MAILSVC_HELPER_SERVICE_UNIT (default `mailsvc.service`): the systemd unit
   * whose cgroup holds the service's own process; a peer in it may use the
   * helper's reserved connection slots (docs/helper.md, Limits).
   */
  serviceUnit: string;
  /** MAILSVC_TLS_DIR (default `/etc/mailsvc/tls`): where `tls-deploy` keeps the certificates and keys it installs (root-owned). */
  tlsDir: string;
  /** MAILSVC_TLS_GROUP (default `ssl-cert`, Debian's): the group given the private keys (0640) and their directories (0750). A name or a gid. */
  tlsGroup: string;
  /** MAILSVC_NGINX_CONFIG (default `/etc/nginx/nginx.conf`): nginx's main file, for `nginx -t` and `nginx -s reload`. */
  nginxConfig: string;
  /** MAILSVC_NGINX_TLS_SNIPPET (default `<nginx config dir>/snippets/mailsvc-tls.conf`): the snippet with ssl_certificate/ssl_certificate_key that mailsvc's site includes. */
  nginxTlsSnippet: string;
}>;

type Source = Record<string, string | undefined>;
const val = (src: Source, key: string): string | undefined => (src[key] === undefined || src[key] === '' ? undefined : src[key]);

function absolute(src: Source, key: string, dflt: string): string {
  const v = val(src, key) ?? dflt;
  if (!isAbsolute(v)) throw new SettingsError(key, `must be an absolute path, got "${v}"`);
  return v;
}

function endpoint(src: Source): HelperEndpoint {
  const v = val(src, 'MAILSVC_HELPER') ?? 'unix:/run/mailsvc/helper.sock';
  if (v === 'direct') return { mode: 'direct' };
  const path = v.startsWith('unix:') ? v.slice('unix:'.length) : '';
  if (!isAbsolute(path)) throw new SettingsError('MAILSVC_HELPER', 'must be unix:<absolute socket path> or direct');
  return { mode: 'unix', path };
}

function serviceUnit(src: Source): string {
  const v = val(src, 'MAILSVC_HELPER_SERVICE_UNIT') ?? 'mailsvc.service';
  if (!/^[A-Za-z0-9:_.@-]{1,255}$/.test(v)) throw new SettingsError('MAILSVC_HELPER_SERVICE_UNIT', 'must be a systemd unit name, e.g. mailsvc.service');
  return v;
}

function rspamdGroup(src: Source): string {
  const v = val(src, 'MAILSVC_RSPAMD_GROUP') ?? '_rspamd';
  if (!/^(?:\d+|[a-z_][a-z0-9_-]{0,31})$/.test(v)) throw new SettingsError('MAILSVC_RSPAMD_GROUP', 'must be a group name or a gid (Debian: _rspamd)');
  return v;
}

function tlsGroup(src: Source): string {
  const v = val(src, 'MAILSVC_TLS_GROUP') ?? 'ssl-cert';
  if (!/^(?:\d+|[a-z_][a-z0-9_-]{0,31})$/.test(v)) throw new SettingsError('MAILSVC_TLS_GROUP', 'must be a group name or a gid (Debian: ssl-cert)');
  return v;
}

/**
 * `src`: the environment over the settings file's values, the file's only
 * when a root process may trust them (`trustedFileValues`: root's file in
 * root's directories, /etc/mailsvc/mailsvc.conf as installed), because these
 * settings name programs and paths the helper uses as root. Never from the
 * database or a caller.
 */
export function loadHelperSettings(src: Source, dataDir = val(src, 'MAILSVC_DATA_DIR') ?? '/var/lib/mailsvc'): HelperSettings {
  const doveadm = val(src, 'MAILSVC_DOVEADM') ?? 'doveadm';
  if (/\s/.test(doveadm)) {
    // The old `sudo -n /usr/bin/doveadm` prefix: sudo cannot work under NoNewPrivileges.
    throw new SettingsError('MAILSVC_DOVEADM', 'must be the doveadm program alone (root access goes through mailsvc-helper now, not a sudo prefix)');
  }
  const dovecotConfig = val(src, 'MAILSVC_DOVECOT_CONFIG');
  const nftTable = (val(src, 'MAILSVC_NFT_TABLE') ?? 'inet mailsvc').trim().replace(/\s+/g, ' ');
  if (!/^(ip|ip6|inet) [A-Za-z][A-Za-z0-9_]{0,63}$/.test(nftTable)) throw new SettingsError('MAILSVC_NFT_TABLE', 'must be "<ip|ip6|inet> <name>", e.g. inet mailsvc');
  const nginxConfig = absolute(src, 'MAILSVC_NGINX_CONFIG', '/etc/nginx/nginx.conf');
  return Object.freeze({
    endpoint: endpoint(src),
    socketGroup: groupId(src, 'MAILSVC_HELPER_SOCKET_GROUP'),
    doveadm,
    dovecotConfig: dovecotConfig === undefined ? undefined : absolute(src, 'MAILSVC_DOVECOT_CONFIG', dovecotConfig),
    postfixConfigDir: absolute(src, 'MAILSVC_POSTFIX_CONFIG_DIR', '/etc/postfix'),
    fail2banSocket: absolute(src, 'MAILSVC_FAIL2BAN_SOCKET', '/run/fail2ban/fail2ban.sock'),
    fail2banConfigDir: absolute(src, 'MAILSVC_FAIL2BAN_CONFIG_DIR', '/etc/fail2ban'),
    rspamdLocalDir: absolute(src, 'MAILSVC_RSPAMD_LOCAL_DIR', '/etc/rspamd/local.d'),
    rspamdGroup: rspamdGroup(src),
    postsrsdDefaults: absolute(src, 'MAILSVC_POSTSRSD_DEFAULTS', '/etc/default/postsrsd'),
    nftTable,
    jails: loadJailSettings(src),
    authLog: absolute(src, 'MAILSVC_AUTH_LOG', join(dataDir, 'auth.log')),
    serviceManager: val(src, 'MAILSVC_SERVICE_MANAGER') === undefined ? undefined : absolute(src, 'MAILSVC_SERVICE_MANAGER', ''),
    serviceUnit: serviceUnit(src),
    tlsDir: absolute(src, 'MAILSVC_TLS_DIR', '/etc/mailsvc/tls'),
    tlsGroup: tlsGroup(src),
    nginxConfig,
    nginxTlsSnippet: absolute(src, 'MAILSVC_NGINX_TLS_SNIPPET', join(dirname(nginxConfig), 'snippets', 'mailsvc-tls.conf')),
  });
}
