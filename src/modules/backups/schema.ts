import { Type } from '@sinclair/typebox';
import type { Static } from '@sinclair/typebox';
import { BACKUP_COMPRESSIONS, BACKUP_DB_MODES, BACKUP_DEFAULTS, BACKUP_STORAGE_TYPES, BACKUP_TYPES, BACKUP_WEEKDAYS, YES_NO } from '../../config/backup-settings.js';

const Nullable = <T extends ReturnType<typeof Type.String>>(t: T) => Type.Union([t, Type.Null()]);

export const BackupRecordSchema = Type.Object(
  {
    id: Type.String({ description: 'the backup directory name: time (UTC) and type' }),
    path: Type.String({ description: 'a directory `mailsvc restore --source` accepts' }),
    type: Type.Union([Type.Literal('full'), Type.Literal('incremental')]),
    parent: Nullable(Type.String()),
    created_at: Type.String({ format: 'date-time' }),
    completed_at: Type.String({ format: 'date-time' }),
    size: Type.Integer({ description: 'bytes of all its artifacts' }),
    files: Type.Integer({ description: 'regular files in the mail storage it holds (with its chain)' }),
    verified_at: Nullable(Type.String({ format: 'date-time' })),
    verify_ok: Type.Union([Type.Boolean(), Type.Null()]),
  },
  { title: 'Backup' },
);
export type BackupRecord = Static<typeof BackupRecordSchema>;

export const BackupListSchema = Type.Object(
  { items: Type.Array(BackupRecordSchema), total: Type.Integer(), limit: Type.Integer(), offset: Type.Integer() },
  { title: 'BackupList' },
);

export const VerifyReportSchema = Type.Object(
  {
    backup: Nullable(Type.String()),
    chain: Type.Array(Type.String()),
    verified_at: Type.String({ format: 'date-time' }),
    ok: Type.Boolean(),
    problems: Type.Array(Type.String()),
  },
  { title: 'BackupVerifyReport' },
);
export type VerifyReport = Static<typeof VerifyReportSchema>;

export type RestoreReport = {
  source: string;
  chain: string[];
  restored_files: boolean;
  restored_db: boolean;
  /** `--restore-config`: config.tar put back (settings and key file, daemon files through their checkers, TLS). */
  restored_config: boolean;
  migrations_applied: string[];
  previous_mail_storage: string | null;
  steps: string[];
};

/** The `backup set` keys: the MAILSVC_BACKUP_ suffixes of the spec, written in lower case with dashes too. */
export const BACKUP_KEYS = ['TYPE', 'FULL_WEEKDAY', 'DB_MODE', 'LOCAL_DIR', 'RETENTION_DAYS', 'REMOTE_TARGETS', 'ONCALENDAR', 'COMPRESSION', 'INCLUDE_REDIS', 'STORAGE_TYPE', 'STORAGE_REMOTE_NAME'] as const;
export type BackupKey = (typeof BACKUP_KEYS)[number];

export const BackupSettingsSchema = Type.Object(
  {
    TYPE: Type.String(),
    FULL_WEEKDAY: Type.String(),
    DB_MODE: Type.String(),
    LOCAL_DIR: Type.String(),
    RETENTION_DAYS: Type.Integer(),
    REMOTE_TARGETS: Type.String(),
    ONCALENDAR: Type.String({ description: 'one systemd calendar expression per line' }),
    COMPRESSION: Type.String(),
    INCLUDE_REDIS: Type.String(),
    STORAGE_TYPE: Type.String(),
    STORAGE_REMOTE_NAME: Type.String(),
    MAIL_STORAGE: Type.String({ description: 'MAILSVC_MAIL_STORAGE' }),
  },
  { title: 'BackupSettings' },
);
export type BackupSettingsView = Static<typeof BackupSettingsSchema>;

/** Where each value in force came from: stored (CLI, API, panel), environment, file (MAILSVC_CONFIG_FILE) or default. */
export const BackupSourcesSchema = Type.Record(Type.String(), Type.Union([Type.Literal('stored'), Type.Literal('environment'), Type.Literal('file'), Type.Literal('default')]), {
  description: 'per setting: stored (set through the CLI, the API or the panel; in the database), environment, file or default',
});

export const BackupShowSchema = Type.Object(
  {
    settings: BackupSettingsSchema,
    sources: BackupSourcesSchema,
    last_backup: Type.Union([BackupRecordSchema, Type.Null()]),
    last_verify: Type.Union([VerifyReportSchema, Type.Null()]),
  },
  { title: 'BackupShow' },
);
export type BackupShow = Static<typeof BackupShowSchema>;

/**
 * One of fixed values (an enum: the panel shows a select, a segmented control, or a switch for yes/no), with
 * its default as `x-default`: a JSON-schema `default` would be filled into every PATCH by the validator.
 */
const choice = <T extends string>(values: readonly T[], dflt: T, description: string) => Type.Union(values.map((v) => Type.Literal(v)), { 'x-default': dflt, description });

/**
 * The settings a PATCH may change. The values of fixed choices are enums, each
 * key carries its default, and `x-unit` / `x-control` say how the panel shows
 * it (a number with its unit, the calendar picker, chips for a list): the
 * panel builds its form from this very schema (GET /panel/schema), so the
 * form and the validation cannot drift apart.
 */
export const BackupSettingsPatch = Type.Object(
  {
    TYPE: Type.Optional(choice(BACKUP_TYPES, BACKUP_DEFAULTS.TYPE, 'auto (full on FULL_WEEKDAY, else incremental), full or incremental')),
    FULL_WEEKDAY: Type.Optional(choice(BACKUP_WEEKDAYS, BACKUP_DEFAULTS.FULL_WEEKDAY, 'the weekday of the full backup when TYPE is auto')),
    DB_MODE: Type.Optional(choice(BACKUP_DB_MODES, BACKUP_DEFAULTS.DB_MODE, 'logical (restore automated) or physical (pg_basebackup / mariabackup staged; restored by hand, see docs/backups.md)')),
    LOCAL_DIR: Type.Optional(Type.String()),
    RETENTION_DAYS: Type.Optional(Type.Union([Type.Integer({ minimum: 1, maximum: 36_500 }), Type.String()], { 'x-default': Number(BACKUP_DEFAULTS.RETENTION_DAYS), description: 'days backups are kept (the limit backup-retention-days)', 'x-unit': 'days' })),
    REMOTE_TARGETS: Type.Optional(Type.String({ 'x-default': BACKUP_DEFAULTS.REMOTE_TARGETS, description: 'space-separated <remote>:<path> (rclone remotes)', 'x-control': 'list' })),
    ONCALENDAR: Type.Optional(Type.String({ 'x-default': BACKUP_DEFAULTS.ONCALENDAR, description: 'systemd calendar expressions separated by ";" or new lines', 'x-control': 'calendar' })),
    COMPRESSION: Type.Optional(choice(BACKUP_COMPRESSIONS, BACKUP_DEFAULTS.COMPRESSION, 'gzip, zstd or none')),
    INCLUDE_REDIS: Type.Optional(choice(YES_NO, BACKUP_DEFAULTS.INCLUDE_REDIS, 'whether Redis is backed up too')),
    STORAGE_TYPE: Type.Optional(choice(BACKUP_STORAGE_TYPES, BACKUP_DEFAULTS.STORAGE_TYPE, 'local, or remote (copied to the remote targets)')),
    STORAGE_REMOTE_NAME: Type.Optional(Type.String({ 'x-default': BACKUP_DEFAULTS.STORAGE_REMOTE_NAME, description: 'an rclone remote name (never a path), for remote storage' })),
    MANIFEST_KEY_FILE: Type.Optional(Type.String({ description: 'refused (422): root acts on it; set it as root in the environment or the root-owned settings file' })),
    CONFIG_PATHS: Type.Optional(Type.String({ description: 'refused (422): root acts on it' })),
    MAIL_STORAGE: Type.Optional(Type.String({ description: 'refused (422): root acts on it' })),
  },
  { additionalProperties: false, description: 'any subset of the backup settings, stored in the database; all or nothing. LOCAL_DIR, MANIFEST_KEY_FILE, CONFIG_PATHS and MAIL_STORAGE are refused (422): root acts on them' },
);
export const BackupSetResultSchema = Type.Object(
  { settings: BackupSettingsSchema, sources: BackupSourcesSchema, changed: Type.Array(Type.String()), next_step: Type.String({ description: 'what the change needs to take effect' }) },
  { title: 'BackupSetResult' },
);
export type BackupSetResult = Static<typeof BackupSetResultSchema>;

export const CalendarQuery = Type.Object(
  {
    expression: Type.String({ minLength: 1, maxLength: 255, description: 'systemd calendar expressions separated by ";" or new lines (at most 10)' }),
    iterations: Type.Optional(Type.String({ pattern: '^([1-9]|1[0-9]|20)$', description: 'how many next runs per expression, 1 to 20 (default 5)' })),
  },
  { additionalProperties: false },
);
export const CalendarPreviewSchema = Type.Object(
  {
    expressions: Type.Array(
      Type.Object({ expression: Type.String(), normalized: Type.String({ description: "systemd's normalized form" }), next: Type.Array(Type.String({ format: 'date-time' }), { description: 'the next runs, UTC' }) }),
    ),
  },
  { title: 'CalendarPreview' },
);

export const RunBackupBody = Type.Object({ full: Type.Optional(Type.Boolean({ description: 'a full backup whatever TYPE says' })) }, { additionalProperties: false });
export type RunBackupInput = Static<typeof RunBackupBody>;
