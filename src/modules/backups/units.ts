import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { exec } from '../../adapters/exec.js';
import { packageRoot } from '../../config/layout.js';
import { withCalendars } from '../../shared/systemd-unit.js';
import { AppError } from '../../shared/errors.js';
import { checkCalendar } from './settings-view.js';

export type Unit = { name: string; text: string };

const INSTALLED_PROGRAM = '/usr/local/bin/mailsvc';

/** The installed command, or (in a checkout) this node and this CLI: systemd-analyze verify checks that ExecStart exists. */
function defaultProgram(): string {
  if (existsSync(INSTALLED_PROGRAM) || !process.argv[1]) return INSTALLED_PROGRAM;
  return `${process.execPath} ${process.argv[1]}`;
}

export const BACKUP_UNITS = ['mailsvc-backup.service', 'mailsvc-backup.timer', 'mailsvc-backup-verify.service', 'mailsvc-backup-verify.timer'] as const;

/**
 * The backup and verify units: deploy/systemd's templates, the ones
 * `mailsvc install` installs, with one OnCalendar= line per ONCALENDAR line in
 * the backup timer (verify stays weekly). Both run as root and carry no
 * settings: mailsvc.conf and root's backup-secrets.conf (the remotes'
 * RCLONE_CONFIG_*) are read by the program; they run one at
 * a time (the lock refuses a second), Persistent=true so a run missed while
 * the host was off happens at boot.
 */
export function renderUnits(onCalendar: readonly string[], program = defaultProgram(), templateDir = join(packageRoot(), 'deploy', 'systemd')): Unit[] {
  return BACKUP_UNITS.map((name) => {
    let text = readFileSync(join(templateDir, name), 'utf8');
    if (name === 'mailsvc-backup.timer') text = withCalendars(text, onCalendar);
    if (program !== INSTALLED_PROGRAM) text = text.replace(/^ExecStart=\/usr\/local\/bin\/mailsvc /m, () => `ExecStart=${program} `);
    return { name, text };
  });
}

/** Renders, checks each calendar line, writes into `dir` and runs `systemd-analyze verify` on the written files. */
export async function writeUnits(onCalendar: readonly string[], dir: string, program?: string): Promise<Unit[]> {
  await checkCalendar([...onCalendar]);
  const units = renderUnits(onCalendar, program);
  mkdirSync(dir, { recursive: true });
  for (const u of units) writeFileSync(join(dir, u.name), u.text, { mode: 0o644 });
  try {
    await exec('systemd-analyze', ['verify', ...units.map((u) => join(dir, u.name))], { timeoutMs: 60_000 });
  } catch (err) {
    const e = err as { kind?: string; message?: string };
    if (e.kind !== 'not-found') throw new AppError('validation', `systemd-analyze verify refused the units: ${e.message ?? ''}`);
  }
  return units;
}
