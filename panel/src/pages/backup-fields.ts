/** The settings the page edits, with what each takes (the API checks them; its message shows at the key). */
export const BACKUP_FIELDS: { key: string; label: string; hint: string }[] = [
  { key: 'TYPE', label: 'Type', hint: 'auto (full on the full weekday, else incremental), full or incremental' },
  { key: 'FULL_WEEKDAY', label: 'Full backup weekday', hint: 'Sun … Sat' },
  { key: 'RETENTION_DAYS', label: 'Keep backups (days)', hint: 'whole days, at least 1' },
  { key: 'ONCALENDAR', label: 'When (systemd calendar)', hint: 'e.g. *-*-* 02:30:00; several separated by ;' },
  { key: 'COMPRESSION', label: 'Compression', hint: 'gzip, zstd or none' },
  { key: 'INCLUDE_REDIS', label: 'Include Redis', hint: 'yes or no' },
  { key: 'LOCAL_DIR', label: 'Local directory', hint: 'an absolute path' },
  { key: 'REMOTE_TARGETS', label: 'Remote targets', hint: 'space-separated <remote>:<path> (rclone remotes)' },
  { key: 'STORAGE_TYPE', label: 'Storage', hint: 'local or remote' },
  { key: 'STORAGE_REMOTE_NAME', label: 'Storage remote name', hint: 'the rclone remote, for remote storage' },
];
