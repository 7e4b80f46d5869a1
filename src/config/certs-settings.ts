import { SettingsError } from './settings-error.js';
import { parseServers } from './dns-settings.js';
import type { DnsServer } from './dns-settings.js';

/** How an ACME challenge is answered (docs/certs.md). */
export type AcmeChallenge = 'http-01' | 'dns-01-rfc2136' | 'dns-01-cloudflare';
export const ACME_CHALLENGES: readonly AcmeChallenge[] = ['http-01', 'dns-01-rfc2136', 'dns-01-cloudflare'];
/** How an issued certificate is put in service (docs/certs.md "Deploying"). */
export type CertsDeploy = 'helper' | 'files';
export const CERTS_DEPLOYS: readonly CertsDeploy[] = ['helper', 'files'];
/** The per-domain names a certificate may carry besides the mail host and the panel. */
export type DomainNameKind = 'mta-sts' | 'autoconfig';

export type CertsSettings = Readonly<{
  /** MAILSVC_MAIL_HOSTNAME: the mail host name (SMTP, IMAP, POP): the first name of the certificate. Unset: nothing to issue. */
  mailHostname: string | undefined;
  /** MAILSVC_PANEL_HOSTNAME: the panel's name, when it differs from the mail host name. */
  panelHostname: string | undefined;
  /** MAILSVC_CERTS_DOMAIN_NAMES: `mta-sts`, `autoconfig` (or both): `<kind>.<domain>` for every active domain joins the certificate. */
  domainNames: readonly DomainNameKind[];
  /** MAILSVC_ACME_DIRECTORY_URL: the CA's ACME directory (Let's Encrypt by default). */
  directoryUrl: string;
  /** MAILSVC_ACME_CA_FILE: a PEM file of extra CAs trusted for the ACME server's own HTTPS (a test CA such as pebble's). */
  caFile: string | undefined;
  /** MAILSVC_ACME_EMAIL: the account's contact address (optional). */
  email: string | undefined;
  /** MAILSVC_ACME_CHALLENGE: http-01 (default), dns-01-rfc2136 or dns-01-cloudflare. */
  challenge: AcmeChallenge;
  /** MAILSVC_ACME_WEBROOT: HTTP-01 answers are written under `<webroot>/.well-known/acme-challenge/` (the nginx snippet serves them); unset: mailsvc's own responder. */
  webroot: string | undefined;
  /** MAILSVC_ACME_HTTP_ADDRESS / MAILSVC_ACME_HTTP_PORT: where the own HTTP-01 responder listens while a challenge is open (`::`, 80). */
  httpAddress: string;
  httpPort: number;
  /** MAILSVC_ACME_RFC2136_SERVER: the authoritative server that takes dynamic updates (host:port). */
  rfc2136Server: DnsServer | undefined;
  /** MAILSVC_ACME_TSIG_KEY_FILE: a root-only or 0640 file `<algorithm>:<name>:<base64 secret>` (as `keymgr -t` prints it, knsupdate's -y form). */
  tsigKeyFile: string | undefined;
  /** MAILSVC_ACME_NSUPDATE: the dynamic-update program (knsupdate; nsupdate reads the same input). */
  nsupdate: string;
  /** MAILSVC_CERTS_DEPLOY: `helper` (default: the tls module's deployer, through the root helper into Postfix, Dovecot and nginx) or `files` (the built-in file deployer under MAILSVC_CERTS_DIR, for tests and trials). */
  deploy: CertsDeploy;
  /** MAILSVC_CERTS_DIR: where the built-in deployer writes `<name>/fullchain.pem` and `<name>/privkey.pem` (default `<data dir>/certs`). */
  certsDir: string;
  /** MAILSVC_CERTS_RETRY_BASE / MAILSVC_CERTS_RETRY_MAX: seconds of the first and the longest wait after a failed attempt (doubling in between). */
  retryBaseSeconds: number;
  retryMaxSeconds: number;
  /** MAILSVC_CERTS_ALARM_DAYS: a certificate of ours this close to expiry makes /health/details degraded. */
  alarmDays: number;
}>;

type Source = Record<string, string | undefined>;
const val = (src: Source, key: string): string | undefined => (src[key] === undefined || src[key] === '' ? undefined : src[key]);
const HOST = /^(?=.{1,253}$)([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z0-9-]{2,63}$/;

function hostName(src: Source, key: string): string | undefined {
  const v = val(src, key)?.toLowerCase().replace(/\.$/, '');
  if (v !== undefined && !HOST.test(v)) throw new SettingsError(key, `"${v.slice(0, 60)}" is not a fully qualified host name`);
  return v;
}

function whole(src: Source, key: string, dflt: number, min: number, max: number): number {
  const v = val(src, key);
  if (v === undefined) return dflt;
  if (!/^\d+$/.test(v) || Number(v) < min || Number(v) > max) throw new SettingsError(key, `must be a whole number from ${min} to ${max}, got "${v.slice(0, 20)}"`);
  return Number(v);
}

export function loadCertsSettings(src: Source, dataDir: string): CertsSettings {
  const directoryUrl = val(src, 'MAILSVC_ACME_DIRECTORY_URL') ?? 'https://acme-v02.api.letsencrypt.org/directory';
  if (!/^https:\/\/[^/\s]+\/\S*$/.test(directoryUrl)) throw new SettingsError('MAILSVC_ACME_DIRECTORY_URL', 'must be an https:// URL of an ACME directory');
  const challenge = (val(src, 'MAILSVC_ACME_CHALLENGE') ?? 'http-01') as AcmeChallenge;
  if (!ACME_CHALLENGES.includes(challenge)) throw new SettingsError('MAILSVC_ACME_CHALLENGE', `must be one of ${ACME_CHALLENGES.join(', ')}`);
  const domainNames = (val(src, 'MAILSVC_CERTS_DOMAIN_NAMES') ?? '').split(/[\s,]+/).filter(Boolean);
  for (const k of domainNames) if (k !== 'mta-sts' && k !== 'autoconfig') throw new SettingsError('MAILSVC_CERTS_DOMAIN_NAMES', `"${k.slice(0, 30)}" is neither mta-sts nor autoconfig`);
  const email = val(src, 'MAILSVC_ACME_EMAIL');
  if (email !== undefined && !/^[^\s@]{1,64}@[^\s@]{1,253}$/.test(email)) throw new SettingsError('MAILSVC_ACME_EMAIL', 'must be an e-mail address');
  const rfc2136 = val(src, 'MAILSVC_ACME_RFC2136_SERVER');
  const rfc2136Server = rfc2136 === undefined ? undefined : parseServers('MAILSVC_ACME_RFC2136_SERVER', rfc2136)[0];
  if (challenge === 'dns-01-rfc2136' && (!rfc2136Server || !val(src, 'MAILSVC_ACME_TSIG_KEY_FILE'))) {
    throw new SettingsError('MAILSVC_ACME_CHALLENGE', 'dns-01-rfc2136 needs MAILSVC_ACME_RFC2136_SERVER and MAILSVC_ACME_TSIG_KEY_FILE');
  }
  const deploy = (val(src, 'MAILSVC_CERTS_DEPLOY') ?? 'helper') as CertsDeploy;
  if (!CERTS_DEPLOYS.includes(deploy)) throw new SettingsError('MAILSVC_CERTS_DEPLOY', `must be one of ${CERTS_DEPLOYS.join(', ')}, got "${deploy.slice(0, 20)}"`);
  const retryBaseSeconds = whole(src, 'MAILSVC_CERTS_RETRY_BASE', 3600, 1, 86_400);
  return Object.freeze({
    mailHostname: hostName(src, 'MAILSVC_MAIL_HOSTNAME'),
    panelHostname: hostName(src, 'MAILSVC_PANEL_HOSTNAME'),
    domainNames: Object.freeze([...new Set(domainNames)] as DomainNameKind[]),
    directoryUrl,
    caFile: val(src, 'MAILSVC_ACME_CA_FILE'),
    email,
    challenge,
    webroot: val(src, 'MAILSVC_ACME_WEBROOT'),
    httpAddress: val(src, 'MAILSVC_ACME_HTTP_ADDRESS') ?? '::',
    httpPort: whole(src, 'MAILSVC_ACME_HTTP_PORT', 80, 1, 65_535),
    rfc2136Server,
    tsigKeyFile: val(src, 'MAILSVC_ACME_TSIG_KEY_FILE'),
    nsupdate: val(src, 'MAILSVC_ACME_NSUPDATE') ?? 'knsupdate',
    deploy,
    certsDir: val(src, 'MAILSVC_CERTS_DIR') ?? `${dataDir}/certs`,
    retryBaseSeconds,
    retryMaxSeconds: Math.max(retryBaseSeconds, whole(src, 'MAILSVC_CERTS_RETRY_MAX', 86_400, 1, 7 * 86_400)),
    alarmDays: whole(src, 'MAILSVC_CERTS_ALARM_DAYS', 14, 1, 90),
  });
}
