import { loadBackupSettings, parseRemoteTarget } from '../../config/backup-settings.js';
import type { BackupSettings } from '../../config/backup-settings.js';
import type { Settings } from '../../config/settings.js';
import { SettingsError } from '../../config/settings-error.js';
import { AppError } from '../../shared/errors.js';
import { exec } from '../../adapters/exec.js';
import { BACKUP_KEYS } from './schema.js';
import type { BackupKey, BackupSetResult, BackupSettingsView } from './schema.js';
import { ROOT_ONLY, sourcesOf, withStored } from './stored-settings.js';
import type { BackupSettingsStore, StoredKey } from './stored-settings.js';

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

const TIMER = 'nothing: stored, every process reads it at once; the next backup run uses it';
const NEEDS: Record<BackupKey, string> = {
  ONCALENDAR: 'stored; it takes effect when the timer unit is re-rendered from it: as root, mailsvc backup units --write /etc/systemd/system (it reads the stored value), then systemctl daemon-reload && systemctl restart mailsvc-backup.timer',
  TYPE: TIMER,
  FULL_WEEKDAY: TIMER,
  DB_MODE: TIMER,
  LOCAL_DIR: ROOT_ONLY.LOCAL_DIR ?? '',
  RETENTION_DAYS: 'nothing: stored (the limit backup-retention-days), the next backup run applies it',
  REMOTE_TARGETS: TIMER,
  COMPRESSION: TIMER,
  INCLUDE_REDIS: TIMER,
  STORAGE_TYPE: TIMER,
  STORAGE_REMOTE_NAME: TIMER,
};

/** A key of `backup set` / PATCH: a stored one, RETENTION_DAYS, or one root acts on (refused with its reason, 422). */
function patchKey(raw: string): BackupKey {
  const k = raw.trim().toUpperCase().replace(/-/g, '_').replace(/^MAILSVC_(BACKUP_)?/, '');
  const rootOnly = ROOT_ONLY[k];
  if (rootOnly) throw new AppError('validation', rootOnly, { errors: [{ path: `/${k}`, message: 'is not set through the CLI, the API or the panel' }] });
  return backupKey(raw);
}

/** An rclone remote NAME (used as `<name>:`), never a path: rclone reads a bare path as a local directory, which root would write. Root's environment defines the remote (remote-policy.ts). */
const REMOTE_NAME = /^[A-Za-z0-9_]{1,64}$/;

/**
 * Validates a change of backup settings against the whole set in force (the
 * defaults, the stored values, the change) and stores it in the database:
 * every process reads it at once. RETENTION_DAYS is the limit
 * `backup-retention-days`. Nothing is stored when any value is refused (422):
 * a key root acts on (LOCAL_DIR …), a remote that is not an rclone remote name.
 */
export async function setBackupSettings(settings: Settings, store: BackupSettingsStore, patch: Record<string, string>, setRetention: (days: number) => Promise<void>, retentionDays: () => Promise<number>, now: number): Promise<BackupSetResult> {
  const entries = Object.entries(patch).map(([k, v]) => [patchKey(k), String(v).trim()] as const);
  if (entries.length === 0) throw new AppError('validation', 'nothing to change: give a key and a value');
  const change: Partial<Record<StoredKey, string>> = {};
  let retention: string | undefined;
  for (const [k, v] of entries) {
    if (v.length > 255 || [...v].some((c) => (c < ' ' && c !== '\n' && c !== '\t') || c === '\x7f')) throw new AppError('validation', `${k}: at most 255 characters, no control characters`);
    if (k === 'RETENTION_DAYS') retention = v;
    else change[k as StoredKey] = v;
  }
  if (change.STORAGE_REMOTE_NAME !== undefined && change.STORAGE_REMOTE_NAME !== '' && (!REMOTE_NAME.test(change.STORAGE_REMOTE_NAME) || !parseRemoteTarget(`${change.STORAGE_REMOTE_NAME}:`))) {
    throw new AppError('validation', `STORAGE_REMOTE_NAME: "${change.STORAGE_REMOTE_NAME.slice(0, 80)}" is not an rclone remote name (letters, digits, _, at most 64; not mailsvccrypt); a path is never accepted, and root's environment defines the remote`);
  }
  for (const t of (change.REMOTE_TARGETS ?? '').split(/\s+/).filter(Boolean)) {
    const r = parseRemoteTarget(t);
    if (!r || !REMOTE_NAME.test(r.remote)) throw new AppError('validation', `REMOTE_TARGETS: "${t.slice(0, 80)}" is not <rclone remote name>:<path> (a name of letters, digits, _, then a colon, then a path of plain segments without .. or a leading -); a local path is never accepted, and root's environment defines the remote`);
  }
  const stored = await store.all();
  const next = { ...stored, ...change };
  let effective: BackupSettings;
  try {
    effective = withStored(settings, next);
    if (retention !== undefined) loadBackupSettings({ MAILSVC_BACKUP_RETENTION_DAYS: retention }, settings.dataDir, settings.configFile);
  } catch (err) {
    if (err instanceof SettingsError) throw new AppError('validation', err.message);
    throw err;
  }
  if (change.ONCALENDAR !== undefined) {
    await checkCalendar(effective.onCalendar);
    change.ONCALENDAR = effective.onCalendar.join(';');
  }
  if (Object.keys(change).length > 0) await store.put(change, now);
  if (retention !== undefined) await setRetention(Number(retention));
  const keys = entries.map(([k]) => k);
  const days = retention !== undefined ? Number(retention) : ((await store.retention()) ?? (await retentionDays()));
  return {
    settings: settingsView(effective, days),
    sources: sourcesOf(settings, next, retention !== undefined || (await store.retention()) !== null),
    changed: keys,
    next_step: [...new Set(keys.map((k) => NEEDS[k]))].join('; '),
  };
}

export type CalendarPreview = { expression: string; normalized: string; next: string[] };

/**
 * The next runs of each OnCalendar line, as systemd computes them
 * (`systemd-analyze calendar --iterations=N`, in UTC). 422 naming a line
 * systemd refuses; 503 when systemd-analyze is not installed here.
 */
export async function calendarPreview(lines: string[], iterations: number): Promise<CalendarPreview[]> {
  const out: CalendarPreview[] = [];
  for (const line of lines) {
    let stdout: string;
    try {
      ({ stdout } = await exec('systemd-analyze', ['calendar', `--iterations=${iterations}`, '--', line], { timeoutMs: 10_000, env: { PATH: process.env.PATH ?? '/usr/bin:/bin', LANG: 'C', TZ: 'UTC' } }));
    } catch (err) {
      const e = err as { kind?: string; message?: string };
      if (e.kind === 'not-found') throw new AppError('unavailable', 'systemd-analyze is not installed here, so the next runs cannot be computed; the expression is checked when it is saved on a host with systemd');
      const message = `"${line.slice(0, 80)}" is not a systemd calendar expression`;
      throw new AppError('validation', `ONCALENDAR: ${message}`, { errors: [{ path: 'querystring.expression', message }] });
    }
    const normalized = /Normalized form:\s*(.+)/.exec(stdout)?.[1]?.trim() ?? line;
    const next = [...stdout.matchAll(/(?:Next elapse|Iter\. #\d+):\s*(?:\w{3} )?(\d{4}-\d{2}-\d{2}) (\d{2}:\d{2}:\d{2}) UTC/g)].map((m) => `${m[1]}T${m[2]}Z`);
    out.push({ expression: line, normalized, next });
  }
  return out;
}
