import { resolve, join } from 'node:path';
import ipaddr from 'ipaddr.js';
import { detectLayout } from './layout.js';
import type { Layout } from './layout.js';

import { SettingsError } from './settings-error.js';
import { loadMailSettings } from './mail-settings.js';
import type { MailSettings } from './mail-settings.js';
import { loadHelperSettings } from './helper-settings.js';
import type { JailSettings } from './jail-settings.js';
import { limitDefaults } from '../shared/limit-keys.js';
import type { LimitValues } from '../shared/limit-keys.js';
import type { HelperSettings } from './helper-settings.js';
import { loadUpdateSettings } from './update-settings.js';
import type { UpdateSettings } from './update-settings.js';
import { loadStatsSettings } from './stats-settings.js';
import { loadDoctorSettings } from './doctor-settings.js';
import { loadAutoconfigSettings } from './autoconfig-settings.js';
import type { AutoconfigSettings } from './autoconfig-settings.js';
import type { DoctorSettings } from './doctor-settings.js';
import type { StatsSettings } from './stats-settings.js';
import { loadDnsSettings } from './dns-settings.js';
import { loadCertsSettings } from './certs-settings.js';
import type { CertsSettings } from './certs-settings.js';
import type { DnsSettings } from './dns-settings.js';
import { loadBackupSettings, restoreAllowList } from './backup-settings.js';
import { settingsSources } from './settings-sources.js';
import type { BackupSettings } from './backup-settings.js';
import { loadWebauthnSettings } from './webauthn-settings.js';
import type { WebauthnSettings } from './webauthn-settings.js';

export { SettingsError };

export type ProviderEnv = {
  baseUrl?: string;
  clientId?: string;
  clientSecret?: string;
  apiKey?: string;
  from?: string;
};

export type Settings = Readonly<{
  /** A checkout of the sources (data in its var/) or an installed release (/var/lib/mailsvc). */
  layout: Layout['kind'];
  apiHost: string;
  apiPort: number;
  dataDir: string;
  configFile: string;
  databaseUrl: string;
  redisUrl: string | undefined;
  adminUsername: string;
  adminPasswordHash: string | undefined;
  adminPassword: string | undefined;
  secretKey: string | undefined;
  secretKeyPrevious: string[];
  mfaRequired: boolean;
  mfaAllowBasicWithoutToken: boolean;
  mfaIssuer: string;
  accessTokenTtl: number;
  mfaChallengeTtl: number;
  apiAuthFailLimit: number;
  apiAuthFailWindow: number;
  apiAuthBlockSeconds: number;
  trustedProxies: string[];
  /** MAILSVC_NFT_TABLE: the one nftables table mailsvc owns, `<family> <name>`. */
  nftTable: string;
  /** MAILSVC_FIREWALL_REVERT_SECONDS: a forced ruleset reverts after this long unless confirmed. */
  firewallRevertSeconds: number;
  outboundAllowHosts: string[];
  smsDefaultRegion: string | undefined;
  smsSendsPerIpHour: number;
  smsSendsPerPhoneHour: number;
  smsProviders: Readonly<Record<'provider_a' | 'provider_b', ProviderEnv>>;
  enableWebPanel: boolean;
  /** MAILSVC_ENABLE_USER_PORTAL: serve the mailbox self-service portal under /portal (off by default). */
  enableUserPortal: boolean;
  /** MAILSVC_PANEL_SESSION_IDLE: a panel session unused this many seconds ends. */
  panelSessionIdle: number;
  /** MAILSVC_PANEL_SESSION_MAX: a panel session ends this many seconds after sign-in (or when its token expires, if sooner). */
  panelSessionMax: number;
  /** MAILSVC_PANEL_REAUTH_WINDOW: seconds after a sign-in during which destructive panel actions are allowed. */
  panelReauthWindow: number;
  /**
   * MAILSVC_REAUTH_WINDOW: seconds after a sign-in during which a token may change
   * how the administrator signs in (passkeys, factors, API keys) without giving the
   * password and a second factor again, whatever the client.
   */
  reauthWindow: number;
  /** MAILSVC_APP_PASSWORDS_PER_MAILBOX: app passwords a mailbox may hold (not revoked; expired ones count until revoked). */
  appPasswordsPerMailbox: number;
  /** MAILSVC_APP_PASSWORD_CREATIONS_PER_HOUR: app passwords that may be made for one mailbox in an hour. */
  appPasswordCreationsPerHour: number;
  /** MAILSVC_PANEL_DEV_HTTP: development only: a plain-HTTP session cookie, honoured only from loopback. */
  panelDevHttp: boolean;
  authLog: string;
  /** Audit records older than this many days are pruned. */
  auditRetentionDays: number;
  logLevel: string;
  /** Seconds a request body may take to arrive (408 after). */
  httpBodyTimeout: number;
  mail: MailSettings;
  helper: HelperSettings;
  /** The fail2ban jails `limits apply` renders. */
  jails: JailSettings;
  /** DNS, DKIM, Cloudflare, SRS and deliverability settings (docs/dns.md). */
  dns: DnsSettings;
  /** ACME certificates: names, CA, challenge, renewal (docs/certs.md). */
  certs: CertsSettings;
  /** MAILSVC_BACKUP_* and MAILSVC_MAIL_STORAGE. */
  backup: BackupSettings;
  /** Each limit key's default: its MAILSVC_<KEY> setting, else the built-in value (a stored value wins at run time). */
  limitDefaults: LimitValues;
  /** Update channels, feeds, the installation root (docs/updates.md). */
  updates: UpdateSettings;
  /** The traffic statistics' log and the metrics scrape token. */
  stats: StatsSettings;
  /** What `mailsvc doctor` checks where (docs/doctor.md). */
  doctor: DoctorSettings;
  /** What mail clients are told: the mail host, where the daemons' ports are read (docs/mail-clients.md). */
  autoconfig: AutoconfigSettings;
  /** Passkeys: the panel's origin, the RP ID, user verification, the passwordless and policy defaults (docs/auth.md). */
  webauthn: WebauthnSettings;
}>;

type Source = Record<string, string | undefined>;

function str(src: Source, key: string): string | undefined {
  const v = src[key];
  return v === undefined || v === '' ? undefined : v;
}

function bool(src: Source, key: string, dflt: boolean): boolean {
  const v = str(src, key);
  if (v === undefined) return dflt;
  const l = v.toLowerCase();
  if (['yes', 'true', '1', 'on'].includes(l)) return true;
  if (['no', 'false', '0', 'off'].includes(l)) return false;
  throw new SettingsError(key, `expected yes or no, got "${v}"`);
}

function int(src: Source, key: string, dflt: number, min: number, max: number): number {
  const v = str(src, key);
  if (v === undefined) return dflt;
  if (!/^\d+$/.test(v)) throw new SettingsError(key, `expected a whole number, got "${v}"`);
  const n = Number(v);
  if (n < min || n > max) throw new SettingsError(key, `must be between ${min} and ${max}`);
  return n;
}

function list(src: Source, key: string): string[] {
  return (str(src, key) ?? '').split(/[\s,]+/).filter(Boolean);
}

function provider(src: Source, code: string): ProviderEnv {
  const p = `MAILSVC_SMS_${code}_`;
  const out: ProviderEnv = {};
  const set = (k: keyof ProviderEnv, suffix: string): void => {
    const v = str(src, p + suffix);
    if (v !== undefined) out[k] = v;
  };
  set('baseUrl', 'BASE_URL');
  set('clientId', 'CLIENT_ID');
  set('clientSecret', 'CLIENT_SECRET');
  set('apiKey', 'API_KEY');
  set('from', 'FROM');
  return out;
}

/** pino's levels; anything else would make pino throw at start with a message that names no key. */
export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;

export function logLevel(src: Source): string {
  const v = str(src, 'MAILSVC_LOG_LEVEL') ?? 'info';
  if (!(LOG_LEVELS as readonly string[]).includes(v)) throw new SettingsError('MAILSVC_LOG_LEVEL', `must be one of ${LOG_LEVELS.join(', ')}, got "${v}"`);
  return v;
}

/**
 * Reads the settings (README, Configuration) from the environment and the settings
 * file (the environment wins). Throws SettingsError naming the first bad key.
 */
/** The privileged helper's own settings (`mailsvc helper serve`): the trusted sources of `settingsSources` only, nothing else checked. */
export function loadHelperProcessSettings(env: Source = process.env): { helper: HelperSettings; logLevel: string } {
  const { trusted, dataDir } = settingsSources(env);
  return { helper: loadHelperSettings(trusted, dataDir), logLevel: logLevel(trusted) };
}

export function loadSettings(env: Source = process.env, cwd = process.cwd(), layout: Layout = detectLayout()): Settings {
  const { configFile, dataDir, src, trusted } = settingsSources(env, cwd, layout);
  // The helper's settings name programs and paths root acts on: a root process takes them from the file only when
  // the service user cannot write it (root's, in root's directories: /etc/mailsvc/mailsvc.conf as installed).
  const helper = loadHelperSettings(trusted, dataDir);

  const databaseUrl = str(src, 'MAILSVC_DATABASE_URL') ?? `sqlite://${join(dataDir, 'mailsvc.db')}`;
  if (!/^(sqlite|postgres|postgresql|mysql|mariadb):\/\//.test(databaseUrl)) {
    throw new SettingsError('MAILSVC_DATABASE_URL', 'must start with sqlite://, postgres:// or mysql://');
  }
  // The doctor's default TLS ports are read from the files the autoconfiguration answers from.
  const autoconfig = loadAutoconfigSettings(src, layout.root);
  const redisUrl = str(src, 'MAILSVC_REDIS_URL');
  if (redisUrl !== undefined && !/^rediss?:\/\//.test(redisUrl)) {
    throw new SettingsError('MAILSVC_REDIS_URL', 'must start with redis:// or rediss://');
  }
  const secretKey = str(src, 'MAILSVC_SECRET_KEY');
  for (const [key, value] of [['MAILSVC_SECRET_KEY', secretKey], ...list(src, 'MAILSVC_SECRET_KEY_PREVIOUS').map((v) => ['MAILSVC_SECRET_KEY_PREVIOUS', v])] as const) {
    if (value !== undefined && Buffer.from(value, 'base64').length !== 32) {
      throw new SettingsError(key, 'must be the base64 of 32 bytes (openssl rand -base64 32)');
    }
  }
  const hash = str(src, 'MAILSVC_ADMIN_PASSWORD_HASH');
  if (hash !== undefined && !hash.startsWith('$argon2id$')) {
    throw new SettingsError('MAILSVC_ADMIN_PASSWORD_HASH', 'must be an argon2id PHC string (mailsvc admin set-password writes one)');
  }
  const region = str(src, 'MAILSVC_SMS_DEFAULT_REGION');
  if (region !== undefined && !/^[A-Z]{2}$/.test(region)) {
    throw new SettingsError('MAILSVC_SMS_DEFAULT_REGION', 'must be a two-letter ISO country code such as DE');
  }
  const trustedProxies = list(src, 'MAILSVC_TRUSTED_PROXIES');
  for (const entry of trustedProxies) {
    const ok = entry.includes('/') ? (() => { try { ipaddr.parseCIDR(entry); return true; } catch { return false; } })() : ipaddr.isValid(entry);
    if (!ok) throw new SettingsError('MAILSVC_TRUSTED_PROXIES', `"${entry}" is not an address or CIDR`);
  }
  const apiHost = str(src, 'MAILSVC_API_HOST') ?? '127.0.0.1';
  // The plain-HTTP panel cookie is for a developer's own machine: never on an address others reach.
  if (bool(src, 'MAILSVC_PANEL_DEV_HTTP', false) && !['127.0.0.1', '::1', 'localhost'].includes(apiHost)) {
    throw new SettingsError('MAILSVC_PANEL_DEV_HTTP', 'is for development on loopback only: set MAILSVC_API_HOST=127.0.0.1 or turn it off and serve the panel behind TLS');
  }
  const username = str(src, 'MAILSVC_ADMIN_USERNAME') ?? 'admin';
  if (username.includes(':')) throw new SettingsError('MAILSVC_ADMIN_USERNAME', 'must not contain ":"');

  return Object.freeze({
    layout: layout.kind,
    apiHost,
    apiPort: int(src, 'MAILSVC_API_PORT', 8080, 0, 65535),
    dataDir,
    configFile,
    databaseUrl,
    redisUrl,
    adminUsername: username,
    adminPasswordHash: hash,
    adminPassword: str(src, 'MAILSVC_ADMIN_PASSWORD'),
    secretKey,
    secretKeyPrevious: list(src, 'MAILSVC_SECRET_KEY_PREVIOUS'),
    mfaRequired: bool(src, 'MAILSVC_MFA_REQUIRED', true),
    mfaAllowBasicWithoutToken: bool(src, 'MAILSVC_MFA_ALLOW_BASIC_WITHOUT_TOKEN', false),
    mfaIssuer: str(src, 'MAILSVC_MFA_ISSUER') ?? 'mailsvc',
    accessTokenTtl: int(src, 'MAILSVC_ACCESS_TOKEN_TTL', 3600, 60, 31 * 86400),
    mfaChallengeTtl: int(src, 'MAILSVC_MFA_CHALLENGE_TTL', 300, 30, 3600),
    apiAuthFailLimit: int(src, 'MAILSVC_API_AUTH_FAIL_LIMIT', 5, 1, 1000),
    apiAuthFailWindow: int(src, 'MAILSVC_API_AUTH_FAIL_WINDOW', 600, 1, 86400 * 7),
    apiAuthBlockSeconds: int(src, 'MAILSVC_API_AUTH_BLOCK_SECONDS', 900, 1, 86400 * 7),
    trustedProxies,
    // The helper applies only files that replace this table; both read it from the same trusted values.
    nftTable: helper.nftTable,
    firewallRevertSeconds: int(src, 'MAILSVC_FIREWALL_REVERT_SECONDS', 120, 1, 3600),
    outboundAllowHosts: list(src, 'MAILSVC_OUTBOUND_ALLOW_HOSTS').map((h) => h.toLowerCase()),
    smsDefaultRegion: region,
    smsSendsPerIpHour: int(src, 'MAILSVC_SMS_SENDS_PER_IP_HOUR', 10, 1, 100_000),
    smsSendsPerPhoneHour: int(src, 'MAILSVC_SMS_SENDS_PER_PHONE_HOUR', 10, 1, 100_000),
    smsProviders: Object.freeze({ provider_a: provider(src, 'PROVIDER_A'), provider_b: provider(src, 'PROVIDER_B') }),
    enableWebPanel: bool(src, 'MAILSVC_ENABLE_WEB_PANEL', false),
    enableUserPortal: bool(src, 'MAILSVC_ENABLE_USER_PORTAL', false),
    panelSessionIdle: int(src, 'MAILSVC_PANEL_SESSION_IDLE', 900, 60, 86400),
    panelSessionMax: int(src, 'MAILSVC_PANEL_SESSION_MAX', 3600, 300, 7 * 86400),
    panelReauthWindow: int(src, 'MAILSVC_PANEL_REAUTH_WINDOW', 300, 30, 3600),
    reauthWindow: int(src, 'MAILSVC_REAUTH_WINDOW', 300, 30, 3600),
    appPasswordsPerMailbox: int(src, 'MAILSVC_APP_PASSWORDS_PER_MAILBOX', 20, 1, 1000),
    appPasswordCreationsPerHour: int(src, 'MAILSVC_APP_PASSWORD_CREATIONS_PER_HOUR', 10, 1, 1000),
    panelDevHttp: bool(src, 'MAILSVC_PANEL_DEV_HTTP', false),
    authLog: resolve(cwd, str(src, 'MAILSVC_AUTH_LOG') ?? join(dataDir, 'auth.log')),
    auditRetentionDays: int(src, 'MAILSVC_AUDIT_RETENTION_DAYS', 365, 1, 36500),
    logLevel: logLevel(src),
    httpBodyTimeout: int(src, 'MAILSVC_HTTP_BODY_TIMEOUT', 30, 1, 3600),
    mail: loadMailSettings(src, dataDir, layout.kind),
    helper,
    jails: helper.jails,
    dns: loadDnsSettings(src),
    certs: loadCertsSettings(src, dataDir),
    backup: loadBackupSettings(src, dataDir, configFile, { trusted, daemonPaths: restoreAllowList(helper).map((r) => r.path), checkout: layout.kind === 'checkout' }),
    limitDefaults: limitDefaults(src, (key, reason) => new SettingsError(key, reason)),
    updates: loadUpdateSettings(src, layout.root, (k, d) => bool(src, k, d), (k, d, lo, hi) => int(src, k, d, lo, hi)),
    stats: loadStatsSettings(src),
    doctor: loadDoctorSettings(src, autoconfig),
    autoconfig,
    webauthn: loadWebauthnSettings(src),
  });
}
