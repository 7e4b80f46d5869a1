import { readSettingsFile } from '../../config/settings-file.js';
import { loadBackupSettings } from '../../config/backup-settings.js';
import type { BackupSettings } from '../../config/backup-settings.js';
import type { Settings } from '../../config/settings.js';
import type { Db } from '../../db/database.js';

/** Where a value in force came from (decisions: a stored value wins over the environment, which wins over the file). */
export type SettingSource = 'stored' | 'environment' | 'file' | 'default';

/** The backup settings stored in the database (service_settings, keys `backup.<KEY>`); RETENTION_DAYS is the limit `backup-retention-days`. */
export const STORED_KEYS = ['TYPE', 'FULL_WEEKDAY', 'DB_MODE', 'REMOTE_TARGETS', 'ONCALENDAR', 'COMPRESSION', 'INCLUDE_REDIS', 'STORAGE_TYPE', 'STORAGE_REMOTE_NAME'] as const;
export type StoredKey = (typeof STORED_KEYS)[number];
const PREFIX = 'backup.';

/**
 * The settings root acts on as a path or a program: never from the database
 * (the service writes it), only from the environment or a root-owned settings
 * file. Setting one through the CLI, the API or the panel is refused with the reason.
 */
export const ROOT_ONLY: Record<string, string> = {
  LOCAL_DIR: 'LOCAL_DIR is the directory root writes the backups into, so it is never taken from what the service stores: as root, set MAILSVC_BACKUP_LOCAL_DIR in the settings file /etc/mailsvc/mailsvc.conf (root-owned, not writable by mailsvc)',
  MANIFEST_KEY_FILE: 'MANIFEST_KEY_FILE is the root-only key that authenticates every manifest, so it is never taken from what the service stores: as root, set MAILSVC_BACKUP_MANIFEST_KEY_FILE in the root-owned settings file /etc/mailsvc/mailsvc.conf',
  CONFIG_PATHS: 'CONFIG_PATHS are paths root archives and a restore writes back, so they are never taken from what the service stores: as root, set MAILSVC_BACKUP_CONFIG_PATHS in the root-owned settings file /etc/mailsvc/mailsvc.conf',
  MAIL_STORAGE: 'MAIL_STORAGE is the directory root backs up and a restore replaces, so it is never taken from what the service stores: set MAILSVC_MAIL_STORAGE in the settings file or the environment',
  ENCRYPTION_KEY: 'ENCRYPTION_KEY is a secret: set MAILSVC_BACKUP_ENCRYPTION_KEY in /etc/mailsvc/backup-secrets.conf (root:root 0600), or let the first remote run generate and seal one (mailsvc backup encryption-key prints it once)',
};

/** The stored backup settings (service_settings). Read on every use: a change by any process is seen at once. */
export class BackupSettingsStore {
  constructor(private readonly db: () => Db) {}

  /** Every stored value; none on a database without the table yet (a fresh host before its first migration). */
  async all(): Promise<Partial<Record<StoredKey, string>>> {
    let rows: { key: string; value: string }[];
    try {
      rows = await this.db().selectFrom('service_settings').select(['key', 'value']).where('key', 'like', `${PREFIX}%`).execute();
    } catch {
      return {};
    }
    const out: Partial<Record<StoredKey, string>> = {};
    for (const r of rows) {
      const k = r.key.slice(PREFIX.length);
      if ((STORED_KEYS as readonly string[]).includes(k)) out[k as StoredKey] = r.value;
    }
    return out;
  }

  /**
   * The stored limit `backup-retention-days` (the limits table, read here so
   * every process sees a change at once), or null when none is stored.
   */
  async retention(): Promise<number | null> {
    try {
      const row = await this.db().selectFrom('limits').select('value').where('key', '=', 'backup-retention-days').executeTakeFirst();
      const n = row ? Number(row.value) : NaN;
      return Number.isInteger(n) && n >= 1 && n <= 36_500 ? n : null;
    } catch {
      return null;
    }
  }

  /** Stores every pair in one transaction: all or nothing. */
  async put(values: Partial<Record<StoredKey, string>>, now: number): Promise<void> {
    await this.db().transaction().execute(async (tx) => {
      for (const [k, value] of Object.entries(values)) {
        const key = `${PREFIX}${k}`;
        const updated = await tx.updateTable('service_settings').set({ value, updated_at: now }).where('key', '=', key).executeTakeFirst();
        if (Number(updated.numUpdatedRows) === 0) await tx.insertInto('service_settings').values({ key, value, updated_at: now }).execute();
      }
    });
  }
}

const envName = (k: string): string => (k === 'MAIL_STORAGE' ? 'MAILSVC_MAIL_STORAGE' : `MAILSVC_BACKUP_${k}`);

/** The raw defaults of the backup settings: the settings file, the environment over it (what loadSettings read). */
export function defaultSource(settings: Settings): Record<string, string | undefined> {
  const b = settings.backup;
  const file = readSettingsFile(settings.configFile);
  const pick = (k: string, fallback: string): string => process.env[envName(k)] || file[envName(k)] || fallback;
  return {
    MAILSVC_BACKUP_TYPE: b.type,
    MAILSVC_BACKUP_FULL_WEEKDAY: b.fullWeekday,
    MAILSVC_BACKUP_DB_MODE: b.dbMode,
    MAILSVC_BACKUP_RETENTION_DAYS: String(b.retentionDays),
    // Local storage clears the targets when read: the raw value is what a switch to remote uses.
    MAILSVC_BACKUP_REMOTE_TARGETS: pick('REMOTE_TARGETS', b.remoteTargets.join(' ')),
    MAILSVC_BACKUP_ONCALENDAR: b.onCalendar.join(';'),
    MAILSVC_BACKUP_COMPRESSION: b.compression,
    MAILSVC_BACKUP_INCLUDE_REDIS: b.includeRedis ? 'yes' : 'no',
    MAILSVC_BACKUP_STORAGE_TYPE: b.storageType,
    MAILSVC_BACKUP_STORAGE_REMOTE_NAME: b.storageRemoteName,
    MAILSVC_MAIL_STORAGE: b.mailStorage,
    MAILSVC_BACKUP_CONFIG_PATHS: b.configPaths.slice(2).join(' '),
  };
}

/**
 * The backup settings in force: the defaults (environment, settings file)
 * with the stored values over them. LOCAL_DIR, the manifest key file, the
 * mail storage and CONFIG_PATHS are never stored (ROOT_ONLY). Throws
 * SettingsError when the stored values make an invalid set.
 */
export function withStored(settings: Settings, stored: Partial<Record<StoredKey, string>>): BackupSettings {
  const src = defaultSource(settings);
  for (const [k, v] of Object.entries(stored)) src[`MAILSVC_BACKUP_${k}`] = v;
  const b = settings.backup;
  const trusted = { MAILSVC_BACKUP_LOCAL_DIR: b.localDir, MAILSVC_BACKUP_MANIFEST_KEY_FILE: b.manifestKeyFile };
  return loadBackupSettings(src, settings.dataDir, settings.configFile, { trusted });
}

/** Where each value of `backup show` came from. */
export function sourcesOf(settings: Settings, stored: Partial<Record<StoredKey, string>>, retentionStored: boolean): Record<string, SettingSource> {
  const file = readSettingsFile(settings.configFile);
  const out: Record<string, SettingSource> = {};
  for (const k of ['TYPE', 'FULL_WEEKDAY', 'DB_MODE', 'LOCAL_DIR', 'RETENTION_DAYS', 'REMOTE_TARGETS', 'ONCALENDAR', 'COMPRESSION', 'INCLUDE_REDIS', 'STORAGE_TYPE', 'STORAGE_REMOTE_NAME', 'MAIL_STORAGE']) {
    const isStored = k === 'RETENTION_DAYS' ? retentionStored : stored[k as StoredKey] !== undefined;
    out[k] = isStored ? 'stored' : process.env[envName(k)] ? 'environment' : file[envName(k)] ? 'file' : 'default';
  }
  return out;
}
