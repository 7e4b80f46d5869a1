/**
 * The backup settings the page shows, in order, with their labels. What each
 * takes — its control, its values, its default, its help — comes from the
 * API's own schema of PATCH /admin/backups/settings (GET /panel/schema).
 */
export const BACKUP_FIELDS: { key: string; label: string }[] = [
  { key: 'TYPE', label: 'Type' },
  { key: 'FULL_WEEKDAY', label: 'Full backup weekday' },
  { key: 'RETENTION_DAYS', label: 'Keep backups' },
  { key: 'ONCALENDAR', label: 'When (systemd calendar)' },
  { key: 'COMPRESSION', label: 'Compression' },
  { key: 'INCLUDE_REDIS', label: 'Include Redis' },
  { key: 'STORAGE_TYPE', label: 'Storage' },
  { key: 'REMOTE_TARGETS', label: 'Remote targets' },
  { key: 'STORAGE_REMOTE_NAME', label: 'Storage remote name' },
  { key: 'DB_MODE', label: 'Database backup mode' },
];
