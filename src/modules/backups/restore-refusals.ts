import { join } from 'node:path';
import { physicalRestoreSteps } from '../../adapters/db-dump/physical.js';
import type { Settings } from '../../config/settings.js';
import { secretKeyInfo } from './backup-run.js';
import type { Manifest } from './manifest.js';

/**
 * A database restore that must not run: a physical copy (PostgreSQL,
 * MariaDB) is never applied automatically (the manual steps are the
 * message); a database whose secrets were sealed with another key than this
 * host's is refused unless the restore puts the backup's key file back too.
 */
export function refuseDb(settings: Settings, m: Manifest, dir: string, withConfig: boolean): void {
  const dump = m.artifacts.find((a) => a.kind === 'database');
  if (m.database.physical && dump) {
    const steps = physicalRestoreSteps(m.database.physical, join(dir, dump.name));
    const headline = `${m.id} holds a physical copy of the whole ${m.database.dialect === 'postgres' ? 'PostgreSQL cluster' : 'MariaDB server'} (${m.database.physical.tool}), which mailsvc does not apply by itself; nothing was changed`;
    throw new PhysicalRestoreRefused(headline, [...steps, `then the mail${withConfig ? ' and the configuration' : ''}: mailsvc restore --source ${dir} --restore-files${withConfig ? ' --restore-config' : ''}`]);
  }
  const want = m.secrets?.key_id;
  if (!want) return;
  const have = secretKeyInfo(settings).key_id;
  if (have === want) return;
  // The restored key file opens them, unless MAILSVC_SECRET_KEY is set here: it wins over any key file.
  if (withConfig && m.secrets?.key_file_in_backup && settings.secretKey === undefined) return;
  if (withConfig && m.secrets?.key_file_in_backup) throw new KeyMismatchRefused(`refusing to restore, nothing was changed: the database of ${m.id} holds secrets sealed with key ${want}; the restored key file would hold it, but MAILSVC_SECRET_KEY (key ${have ?? '?'}) wins over any key file: unset it, or set it to the old host's key`);
  const how = m.secrets?.key_file_in_backup
    ? 'add --restore-config to put the backup\'s key file back with the configuration'
    : 'the backup host took its key from MAILSVC_SECRET_KEY, which no backup holds: set MAILSVC_SECRET_KEY to that key';
  throw new KeyMismatchRefused(`refusing to restore, nothing was changed: the database of ${m.id} holds secrets sealed with key ${want}, and this host's key is ${have ?? 'missing'}; ${how}`);
}

import { KeyMismatchRefused, PhysicalRestoreRefused } from './errors.js';
export { KeyMismatchRefused, PhysicalRestoreRefused };
