import { Type } from '@sinclair/typebox';
import type { Static } from '@sinclair/typebox';

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

export const BackupSettingsPatch = Type.Object(
  {
    TYPE: Type.Optional(Type.String({ description: 'auto, full or incremental' })),
    FULL_WEEKDAY: Type.Optional(Type.String({ description: 'Sun … Sat' })),
    DB_MODE: Type.Optional(Type.String({ description: 'logical (restore automated) or physical (pg_basebackup / mariabackup staged; restored by hand, see docs/backups.md)' })),
    LOCAL_DIR: Type.Optional(Type.String()),
    RETENTION_DAYS: Type.Optional(Type.Union([Type.Integer({ minimum: 1 }), Type.String()])),
    REMOTE_TARGETS: Type.Optional(Type.String({ description: 'space-separated <remote>:<path>' })),
    ONCALENDAR: Type.Optional(Type.String({ description: 'systemd calendar expressions separated by ";" or new lines' })),
    COMPRESSION: Type.Optional(Type.String({ description: 'gzip, zstd or none' })),
    INCLUDE_REDIS: Type.Optional(Type.String({ description: 'yes or no' })),
    STORAGE_TYPE: Type.Optional(Type.String({ description: 'local or remote' })),
    STORAGE_REMOTE_NAME: Type.Optional(Type.String({ description: 'an rclone remote name (never a path)' })),
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

export const RunBackupBody = Type.Object({ full: Type.Optional(Type.Boolean({ description: 'a full backup whatever TYPE says' })) }, { additionalProperties: false });
export type RunBackupInput = Static<typeof RunBackupBody>;
