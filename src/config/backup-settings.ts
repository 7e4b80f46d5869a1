import { dirname, isAbsolute, join } from 'node:path';
import { SettingsError } from './settings-error.js';
import type { HelperSettings } from './helper-settings.js';

/** One place of the restore allow-list: a daemon directory mailsvc renders into (or one file), and the groups its files may have besides root's. */
export type RestoreRoot = { path: string; kind: 'dir' | 'file'; daemon: string; groups: string[] };

/**
 * The daemon files a restore may put back (besides the settings file and the
 * key file), from the helper's settings (root's settings file or the environment): Postfix's
 * configuration directory, Dovecot's, Rspamd's local.d and the DKIM keys
 * beside it, fail2ban's jail.d, postsrsd's defaults file. The default of
 * MAILSVC_BACKUP_CONFIG_PATHS, and all a backup archives of it.
 */
export function restoreAllowList(h: Pick<HelperSettings, 'postfixConfigDir' | 'dovecotConfig' | 'rspamdLocalDir' | 'rspamdGroup' | 'fail2banConfigDir' | 'postsrsdDefaults'>): RestoreRoot[] {
  return [
    { path: h.postfixConfigDir, kind: 'dir', daemon: 'postfix', groups: ['postfix', 'postdrop'] },
    { path: dirname(h.dovecotConfig ?? '/etc/dovecot/dovecot.conf'), kind: 'dir', daemon: 'dovecot', groups: ['dovecot'] },
    { path: h.rspamdLocalDir, kind: 'dir', daemon: 'rspamd', groups: [h.rspamdGroup] },
    { path: join(dirname(h.rspamdLocalDir), 'dkim'), kind: 'dir', daemon: 'rspamd', groups: [h.rspamdGroup] },
    { path: join(h.fail2banConfigDir, 'jail.d'), kind: 'dir', daemon: 'fail2ban', groups: [] },
    { path: h.postsrsdDefaults, kind: 'file', daemon: 'postsrsd', groups: [] },
  ].map((r) => ({ ...r, path: r.path.replace(/\/+$/, '') || '/' })) as RestoreRoot[];
}

export const BACKUP_WEEKDAYS = ['Sun', 'Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat'] as const;
export const BACKUP_COMPRESSIONS = ['gzip', 'zstd', 'none'] as const;
export const BACKUP_TYPES = ['auto', 'full', 'incremental'] as const;
export const BACKUP_DB_MODES = ['logical', 'physical'] as const;
export const BACKUP_STORAGE_TYPES = ['local', 'remote'] as const;
export const YES_NO = ['yes', 'no'] as const;

/**
 * The defaults of the backup settings, as MAILSVC_BACKUP_* text: read here,
 * and the `default` of each key in the API's schema (the panel shows it).
 */
export const BACKUP_DEFAULTS = {
  TYPE: 'auto',
  FULL_WEEKDAY: 'Sun',
  DB_MODE: 'logical',
  RETENTION_DAYS: '14',
  REMOTE_TARGETS: '',
  ONCALENDAR: '*-*-* 02:30:00',
  COMPRESSION: 'gzip',
  INCLUDE_REDIS: 'no',
  STORAGE_TYPE: 'local',
  STORAGE_REMOTE_NAME: '',
} as const;

export type BackupSettings = Readonly<{
  /** MAILSVC_BACKUP_TYPE: auto (full on FULL_WEEKDAY, else incremental), full, or incremental (full when no chain exists). */
  type: 'auto' | 'full' | 'incremental';
  fullWeekday: (typeof BACKUP_WEEKDAYS)[number];
  dbMode: 'logical' | 'physical';
  /** MAILSVC_BACKUP_LOCAL_DIR: for a root run from the environment or a root-owned settings file only. */
  localDir: string;
  /** MAILSVC_BACKUP_MANIFEST_KEY_FILE: the root-only HMAC key that authenticates every manifest (same sources as localDir). */
  manifestKeyFile: string;
  /** MAILSVC_BACKUP_SECRETS_FILE (default: backup-secrets.conf beside the settings file): root's remote definitions and credentials (same sources as localDir). */
  secretsFile: string;
  retentionDays: number;
  /** `<remote>:<path>` entries; empty when STORAGE_TYPE=local (the spec: local clears the targets). */
  remoteTargets: string[];
  /** systemd OnCalendar expressions, one per line. */
  onCalendar: string[];
  compression: (typeof BACKUP_COMPRESSIONS)[number];
  includeRedis: boolean;
  storageType: 'local' | 'remote';
  storageRemoteName: string | undefined;
  /** MAILSVC_MAIL_STORAGE: the root of Dovecot's mail location. */
  mailStorage: string;
  /** Configuration a restore on a fresh host needs, besides the settings file and the key file. */
  configPaths: string[];
}>;

type Source = Record<string, string | undefined>;
const val = (src: Source, key: string): string | undefined => (src[key] === undefined || src[key] === '' ? undefined : src[key]);

function oneOf<T extends string>(src: Source, key: string, values: readonly T[], dflt: T): T {
  const v = val(src, key) ?? dflt;
  const hit = values.find((x) => x.toLowerCase() === v.toLowerCase());
  if (!hit) throw new SettingsError(key, `must be one of ${values.join(', ')}, got "${v}"`);
  return hit;
}

function absolute(src: Source, key: string, dflt: string): string {
  const v = val(src, key) ?? dflt;
  if (!isAbsolute(v)) throw new SettingsError(key, `must be an absolute path, got "${v}"`);
  return v.replace(/\/+$/, '') || '/';
}

/**
 * A `<remote>:<path>` entry as rclone names it: the remote a config name
 * (letters, digits, underscores; never mailsvc's own crypt layer), the path
 * plain segments on that remote (no `..`, no leading `-`, no colon, comma or
 * space: never an rclone flag, an on-the-fly remote or a connection string).
 */
export function parseRemoteTarget(entry: string): { remote: string; path: string } | null {
  const m = /^([A-Za-z0-9_]{1,64}):([A-Za-z0-9_./@+=-]{0,255})$/.exec(entry);
  if (!m || (m[1] ?? '').toLowerCase() === 'mailsvccrypt') return null;
  const path = m[2] ?? '';
  if (path.startsWith('-') || path.split('/').some((s) => s === '..')) return null;
  return { remote: m[1] ?? '', path };
}

/**
 * `trusted`: the values a root run may take LOCAL_DIR and the manifest key
 * file from (the environment, and the settings file only when root owns it
 * and no one else can write it); `daemonPaths`: the default CONFIG_PATHS (the
 * restore allow-list's paths).
 */
export function loadBackupSettings(src: Source, dataDir: string, configFile: string, opts: { trusted?: Source; daemonPaths?: string[]; checkout?: boolean } = {}): BackupSettings {
  const trusted = opts.trusted ?? src;
  const p = 'MAILSVC_BACKUP_';
  const storageType = oneOf(src, `${p}STORAGE_TYPE`, BACKUP_STORAGE_TYPES, BACKUP_DEFAULTS.STORAGE_TYPE);
  const storageRemoteName = val(src, `${p}STORAGE_REMOTE_NAME`);
  let remoteTargets = (val(src, `${p}REMOTE_TARGETS`) ?? '').split(/\s+/).filter(Boolean);
  for (const t of remoteTargets) if (!parseRemoteTarget(t)) throw new SettingsError(`${p}REMOTE_TARGETS`, `"${t}" is not <remote>:<path> (an rclone remote name, a colon, a path)`);
  if (storageType === 'local') remoteTargets = [];
  else if (remoteTargets.length === 0) {
    if (!storageRemoteName || !parseRemoteTarget(`${storageRemoteName}:`)) throw new SettingsError(`${p}STORAGE_TYPE`, 'remote needs MAILSVC_BACKUP_REMOTE_TARGETS or MAILSVC_BACKUP_STORAGE_REMOTE_NAME (an rclone remote name)');
    remoteTargets = [`${storageRemoteName}:mailsvc-backups`];
  }
  const retention = val(src, `${p}RETENTION_DAYS`) ?? BACKUP_DEFAULTS.RETENTION_DAYS;
  if (!/^\d+$/.test(retention) || Number(retention) < 1 || Number(retention) > 36_500) throw new SettingsError(`${p}RETENTION_DAYS`, 'must be a whole number of days from 1 to 36500');
  const onCalendar = (val(src, `${p}ONCALENDAR`) ?? BACKUP_DEFAULTS.ONCALENDAR).split(/\r?\n|;/).map((l) => l.trim()).filter(Boolean);
  // Rendered into unit files by root (`backup units --write`): a line is calendar text, never a control character.
  // eslint-disable-next-line no-control-regex
  if (onCalendar.some((l) => /[\x00-\x1f\x7f]/.test(l) || l.length > 255)) throw new SettingsError(`${p}ONCALENDAR`, 'each line must be a systemd calendar expression: at most 255 characters, no control characters');
  const mailStorage = absolute(src, 'MAILSVC_MAIL_STORAGE', '/var/vmail');
  const configPaths = (val(src, `${p}CONFIG_PATHS`) ?? (opts.daemonPaths ?? ['/etc/postfix', '/etc/dovecot', '/etc/rspamd/local.d', '/etc/rspamd/dkim', '/etc/fail2ban/jail.d', '/etc/default/postsrsd']).join(' ')).split(/\s+/).filter(Boolean);
  for (const c of configPaths) if (!isAbsolute(c)) throw new SettingsError(`${p}CONFIG_PATHS`, `"${c}" is not an absolute path`);
  return Object.freeze({
    type: oneOf(src, `${p}TYPE`, BACKUP_TYPES, BACKUP_DEFAULTS.TYPE),
    fullWeekday: oneOf(src, `${p}FULL_WEEKDAY`, BACKUP_WEEKDAYS, BACKUP_DEFAULTS.FULL_WEEKDAY),
    dbMode: oneOf(src, `${p}DB_MODE`, BACKUP_DB_MODES, BACKUP_DEFAULTS.DB_MODE),
    localDir: absolute(trusted, `${p}LOCAL_DIR`, '/var/backups/mailsvc'),
    manifestKeyFile: absolute(trusted, `${p}MANIFEST_KEY_FILE`, opts.checkout ? join(dataDir, 'backup-manifest.key') : '/etc/mailsvc/backup-manifest.key'),
    secretsFile: absolute(trusted, `${p}SECRETS_FILE`, join(dirname(configFile), 'backup-secrets.conf')),
    retentionDays: Number(retention),
    remoteTargets,
    onCalendar,
    compression: oneOf(src, `${p}COMPRESSION`, BACKUP_COMPRESSIONS, BACKUP_DEFAULTS.COMPRESSION),
    includeRedis: oneOf(src, `${p}INCLUDE_REDIS`, YES_NO, BACKUP_DEFAULTS.INCLUDE_REDIS) === 'yes',
    storageType,
    storageRemoteName,
    mailStorage,
    configPaths: [configFile, join(dataDir, 'secret.key'), ...configPaths],
  });
}
