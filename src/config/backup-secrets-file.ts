import { readSettingsFile } from './settings-file.js';
import { onlyRootWrites } from './trusted-file.js';

/**
 * The one root-only file beside the settings file (installed:
 * /etc/mailsvc/backup-secrets.conf, root:root 0600): the off-site remotes'
 * definitions with their credentials (`RCLONE_CONFIG_<REMOTE>_*`) and
 * `MAILSVC_BACKUP_ENCRYPTION_KEY`. They stay out of mailsvc.conf because the
 * service user reads that file: a service taken over must not learn how to
 * reach, and delete, the off-site copies. Nothing else is read from it.
 */
export const isBackupSecretKey = (key: string): boolean => key.startsWith('RCLONE_CONFIG_') || key === 'MAILSVC_BACKUP_ENCRYPTION_KEY';

/**
 * What root's backup runs take the remotes from: the environment over the
 * file's backup secrets. The file is read only by root, and only when no one
 * but root can change it (`onlyRootWrites`); another process gets the
 * environment alone.
 */
export function backupSecretsEnv(file: string, env: Record<string, string | undefined> = process.env, uid: number | undefined = process.getuid?.()): Record<string, string | undefined> {
  if (uid !== 0 || !onlyRootWrites(file)) return env;
  const fromFile = Object.fromEntries(Object.entries(readSettingsFile(file)).filter(([k]) => isBackupSecretKey(k)));
  return { ...fromFile, ...env };
}
