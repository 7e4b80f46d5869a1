import { readSettingsFile, writeSettingsKey } from '../../config/settings-file.js';
import { loadBackupSettings } from '../../config/backup-settings.js';
import type { BackupSettings } from '../../config/backup-settings.js';
import type { Settings } from '../../config/settings.js';
import { SettingsError } from '../../config/settings-error.js';
import { AppError } from '../../shared/errors.js';
import { exec } from '../../adapters/exec.js';
import { BACKUP_KEYS } from './schema.js';
import type { BackupKey, BackupSetResult, BackupSettingsView } from './schema.js';

export function settingsView(b: BackupSettings, retentionDays: number): BackupSettingsView {
  return {
    TYPE: b.type,
    FULL_WEEKDAY: b.fullWeekday,
    DB_MODE: b.dbMode,
    LOCAL_DIR: b.localDir,
    RETENTION_DAYS: retentionDays,
    REMOTE_TARGETS: b.remoteTargets.join(' '),
    ONCALENDAR: b.onCalendar.join('\n'),
    COMPRESSION: b.compression,
    INCLUDE_REDIS: b.includeRedis ? 'yes' : 'no',
    STORAGE_TYPE: b.storageType,
    STORAGE_REMOTE_NAME: b.storageRemoteName ?? '',
    MAIL_STORAGE: b.mailStorage,
  };
}

/** `retention-days`, `RETENTION_DAYS`, `MAILSVC_BACKUP_RETENTION_DAYS` all name one key. */
export function backupKey(raw: string): BackupKey {
  const k = raw.trim().toUpperCase().replace(/-/g, '_').replace(/^MAILSVC_BACKUP_/, '');
  if (!(BACKUP_KEYS as readonly string[]).includes(k)) throw new AppError('validation', `unknown backup key "${raw.slice(0, 40)}"; keys: ${BACKUP_KEYS.join(', ')}`);
  return k as BackupKey;
}

/** Each OnCalendar line, checked by systemd's own parser when it is installed. */
export async function checkCalendar(lines: string[]): Promise<void> {
  for (const line of lines) {
    try {
      await exec('systemd-analyze', ['calendar', line], { timeoutMs: 10_000 });
    } catch (err) {
      const e = err as { kind?: string; message?: string };
      if (e.kind === 'not-found') return;
      throw new AppError('validation', `ONCALENDAR: "${line.slice(0, 80)}" is not a systemd calendar expression (${(e.message ?? '').slice(0, 200)})`);
    }
  }
}

const NEEDS: Record<BackupKey, string> = {
  ONCALENDAR: 're-render the timer: run the installer again (or `mailsvc backup units --write`), then `systemctl daemon-reload && systemctl restart mailsvc-backup.timer`',
  TYPE: 'restart the backup service and timer: systemctl restart mailsvc-backup.timer',
  FULL_WEEKDAY: 'restart the backup service and timer: systemctl restart mailsvc-backup.timer',
  DB_MODE: 'restart the backup service and timer: systemctl restart mailsvc-backup.timer',
  LOCAL_DIR: 'set as root in the settings file or the units\' environment (existing backups stay in the old directory)',
  RETENTION_DAYS: 'nothing: the next backup run applies it',
  REMOTE_TARGETS: 'restart the backup service and timer: systemctl restart mailsvc-backup.timer',
  COMPRESSION: 'restart the backup service and timer: systemctl restart mailsvc-backup.timer',
  INCLUDE_REDIS: 'restart the backup service and timer: systemctl restart mailsvc-backup.timer',
  STORAGE_TYPE: 'restart the backup service and timer: systemctl restart mailsvc-backup.timer',
  STORAGE_REMOTE_NAME: 'restart the backup service and timer: systemctl restart mailsvc-backup.timer',
};

/**
 * Validates a change of MAILSVC_BACKUP_* settings against the whole set (as
 * the next start would read it) and writes it to the settings file. The
 * retention goes to the limit `backup-retention-days` (a stored limit wins over
 * the environment). Nothing is written when any value is refused.
 */
export async function setBackupSettings(settings: Settings, patch: Record<string, string>, setRetention: (days: number) => Promise<void>, retentionDays: () => Promise<number>): Promise<BackupSetResult> {
  const entries = Object.entries(patch).map(([k, v]) => [backupKey(k), v] as const);
  if (entries.length === 0) throw new AppError('validation', 'nothing to change: give a key and a value');
  // Root writes the backups there: a root run takes it from the environment or the root-owned settings file only, never from what the service writes.
  if (entries.some(([k]) => k === 'LOCAL_DIR')) throw new AppError('validation', 'LOCAL_DIR is where root writes the backups and is not changed here: as root, set MAILSVC_BACKUP_LOCAL_DIR in the settings file (root-owned, not writable by mailsvc) or in the backup units\' environment');
  // The settings in force, with the change on top: what the next start reads once the file holds it.
  const current = settingsView(settings.backup, settings.backup.retentionDays);
  const src: Record<string, string | undefined> = {
    ...Object.fromEntries(Object.entries(current).map(([k, v]) => [k === 'MAIL_STORAGE' ? 'MAILSVC_MAIL_STORAGE' : `MAILSVC_BACKUP_${k}`, String(v)])),
    MAILSVC_BACKUP_ONCALENDAR: settings.backup.onCalendar.join(';'),
    // Local storage clears the targets when read; the file's own value is what a switch back to remote uses.
    MAILSVC_BACKUP_REMOTE_TARGETS: readSettingsFile(settings.configFile).MAILSVC_BACKUP_REMOTE_TARGETS ?? process.env.MAILSVC_BACKUP_REMOTE_TARGETS ?? current.REMOTE_TARGETS,
    MAILSVC_BACKUP_CONFIG_PATHS: settings.backup.configPaths.slice(2).join(' '),
  };
  for (const [k, v] of entries) src[`MAILSVC_BACKUP_${k}`] = v;
  let next: BackupSettings;
  try {
    next = loadBackupSettings(src, settings.dataDir, settings.configFile);
  } catch (err) {
    if (err instanceof SettingsError) throw new AppError('validation', err.message);
    throw err;
  }
  if (entries.some(([k]) => k === 'ONCALENDAR')) await checkCalendar(next.onCalendar);
  // A value in the environment wins over the file: say so instead of pretending it changed.
  for (const [k] of entries) {
    if (k !== 'RETENTION_DAYS' && process.env[`MAILSVC_BACKUP_${k}`] !== undefined) throw new AppError('conflict', `MAILSVC_BACKUP_${k} is set in the environment, which wins over the settings file; change it there`);
  }
  for (const [k, v] of entries) {
    if (k === 'RETENTION_DAYS') await setRetention(next.retentionDays);
    else writeSettingsKey(settings.configFile, `MAILSVC_BACKUP_${k}`, k === 'ONCALENDAR' ? next.onCalendar.join(';') : v);
  }
  const keys = entries.map(([k]) => k);
  const steps = [...new Set(keys.map((k) => NEEDS[k]))];
  return { settings: settingsView(next, keys.includes('RETENTION_DAYS') ? next.retentionDays : await retentionDays()), changed: keys, next_step: steps.join('; ') };
}
