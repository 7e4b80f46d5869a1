import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { exec } from '../../adapters/exec.js';
import { AppError } from '../../shared/errors.js';
import { checkCalendar } from './settings-view.js';

export type Unit = { name: string; text: string };

/** The installed command, or (in a checkout) this node and this CLI: systemd-analyze verify checks that ExecStart exists. */
function defaultProgram(): string {
  const installed = '/usr/local/bin/mailsvc';
  if (existsSync(installed) || !process.argv[1]) return installed;
  return `${process.execPath} ${process.argv[1]}`;
}

/** A systemd unit's OnCalendar value carries no newline and no `%` specifier surprise. */
const calendarLine = (l: string): string => l.replace(/%/g, '%%');

/**
 * The backup and verify units. Backup: one OnCalendar= line per ONCALENDAR
 * line. Verify: weekly. Both run as root (the backup reads every mailbox and
 * stops Postfix through the helper), one at a time (the lock refuses a
 * second), with Persistent=yes so a run missed while the host was off happens
 * at boot.
 */
export function renderUnits(onCalendar: readonly string[], program = defaultProgram()): Unit[] {
  const service = (what: string, args: string): string =>
    [
      `# Rendered by \`mailsvc backup units\` from MAILSVC_BACKUP_ONCALENDAR; re-render after changing it.`,
      '[Unit]',
      `Description=mailsvc ${what}`,
      'After=network-online.target postgresql.service mariadb.service redis-server.service',
      'Wants=network-online.target',
      '',
      '[Service]',
      'Type=oneshot',
      `ExecStart=${program} ${args}`,
      'EnvironmentFile=-/etc/mailsvc/mailsvc.conf',
      'EnvironmentFile=-/etc/mailsvc/helper.env',
      'Environment=NODE_ENV=production MAILSVC_HELPER=direct',
      'UMask=0077',
      'Nice=10',
      'IOSchedulingClass=idle',
      '',
    ].join('\n');
  const timer = (what: string, unit: string, calendar: readonly string[]): string =>
    ['[Unit]', `Description=mailsvc ${what} schedule`, '', '[Timer]', ...calendar.map((c) => `OnCalendar=${calendarLine(c)}`), 'Persistent=true', 'RandomizedDelaySec=5min', `Unit=${unit}`, '', '[Install]', 'WantedBy=timers.target', ''].join('\n');
  return [
    { name: 'mailsvc-backup.service', text: service('backup', 'backup run') },
    { name: 'mailsvc-backup.timer', text: timer('backup', 'mailsvc-backup.service', onCalendar) },
    { name: 'mailsvc-backup-verify.service', text: service('backup verify (restores the newest chain into scratch space)', 'backup verify') },
    { name: 'mailsvc-backup-verify.timer', text: timer('backup verify', 'mailsvc-backup-verify.service', ['Sun *-*-* 05:00:00']) },
  ];
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
