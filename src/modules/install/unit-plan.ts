import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { withCalendars } from '../../shared/systemd-unit.js';

/** The installer's switches (spec: Backups, Other switches), read from the environment and the settings file. */
export type InstallSwitches = {
  backupCalendars: string[];
  enableSrs: boolean;
  enableDeliverability: boolean;
  enableAutoUpdates: boolean;
  installRoot: string;
};

type Source = Record<string, string | undefined>;
const yes = (v: string | undefined): boolean => ['yes', 'true', '1', 'on'].includes((v ?? '').trim().toLowerCase());

export const DEFAULT_BACKUP_CALENDAR = '*-*-* 02:30:00';

export function readSwitches(src: Source, installRoot: string): InstallSwitches {
  // ONCALENDAR may hold several expressions: one per line, or separated by ";".
  const calendars = (src.MAILSVC_BACKUP_ONCALENDAR ?? '').split(/[;\n]/).map((c) => c.trim()).filter(Boolean);
  return {
    backupCalendars: calendars.length ? calendars : [DEFAULT_BACKUP_CALENDAR],
    enableSrs: yes(src.MAILSVC_ENABLE_SRS),
    enableDeliverability: yes(src.MAILSVC_ENABLE_DELIVERABILITY_TIMER),
    enableAutoUpdates: yes(src.MAILSVC_ENABLE_AUTO_UPDATES),
    installRoot,
  };
}

/** One unit the installer renders, and whether the switches enable it. */
export type UnitFile = { name: string; text: string; enable: boolean; start: boolean };

type Spec = { name: string; enable: (s: InstallSwitches) => boolean; start?: boolean; calendars?: (s: InstallSwitches) => string[] };

/** Every unit mailsvc installs; timers are enabled by their switch, their services started by them. */
export const UNITS: readonly Spec[] = [
  { name: 'mailsvc.service', enable: () => true, start: true },
  { name: 'mailsvc-helper.service', enable: () => false },
  { name: 'mailsvc-helper.socket', enable: () => true, start: true },
  { name: 'mailsvc-update@.service', enable: () => false },
  { name: 'mailsvc-backup.service', enable: () => false },
  { name: 'mailsvc-backup@.service', enable: () => false },
  { name: 'mailsvc-backup.timer', enable: () => true, start: true, calendars: (s) => s.backupCalendars },
  { name: 'mailsvc-backup-verify.service', enable: () => false },
  { name: 'mailsvc-backup-verify.timer', enable: () => true, start: true },
  { name: 'mailsvc-stats.service', enable: () => false },
  { name: 'mailsvc-stats.timer', enable: () => true, start: true },
  { name: 'mailsvc-dns-report.service', enable: () => false },
  { name: 'mailsvc-dns-report.timer', enable: (s) => s.enableDeliverability, start: true },
  // Advances DKIM rotations in progress and starts one where a key is older than dkim-rotation-days.
  { name: 'mailsvc-dkim-rotate.service', enable: () => false },
  { name: 'mailsvc-dkim-rotate.timer', enable: () => true, start: true },
  { name: 'mailsvc-tls-check.service', enable: () => false },
  { name: 'mailsvc-tls-check.timer', enable: () => true, start: true },
  // Renews the ACME certificates when due (docs/certs.md).
  { name: 'mailsvc-certs-renew.service', enable: () => false },
  { name: 'mailsvc-certs-renew.timer', enable: () => true, start: true },
  { name: 'mailsvc-srs-sync.service', enable: () => false },
  { name: 'mailsvc-srs-sync.timer', enable: (s) => s.enableSrs, start: true },
  { name: 'mailsvc-auto-update.service', enable: () => false },
  { name: 'mailsvc-auto-update.timer', enable: (s) => s.enableAutoUpdates, start: true },
];

/** What the host has that a unit depends on: the group postdrop exists once Postfix is installed. */
export type HostFacts = { postdropGroup: boolean };

/**
 * The units rendered from deploy/systemd: the installation root put in, the
 * backup calendar(s) written out, and the service given the group postdrop
 * where it exists: `postqueue -j` reaches showq only as that group, and under
 * NoNewPrivileges its setgid bit does not apply. (A group that does not exist
 * would stop the unit from starting, so it is written only when it does.)
 */
export function renderUnits(templateDir: string, s: InstallSwitches, host: HostFacts = { postdropGroup: false }): UnitFile[] {
  return UNITS.map((u) => {
    let text = readFileSync(join(templateDir, u.name), 'utf8').replaceAll('/opt/mailsvc', s.installRoot);
    if (u.calendars) text = withCalendars(text, u.calendars(s));
    if (u.name === 'mailsvc.service' && host.postdropGroup) text = text.replace(/^Group=mailsvc$/m, 'Group=mailsvc\nSupplementaryGroups=postdrop');
    return { name: u.name, text, enable: u.enable(s), start: u.start === true && u.enable(s) };
  });
}

export { calendarsOf } from '../../shared/systemd-unit.js';
