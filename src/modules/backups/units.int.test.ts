import { describe, expect, it } from 'vitest';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CLI_BIN, REPO_ROOT } from '../../../test/helpers/cli.js';
import { findProgram } from '../../../test/helpers/mail-daemons.js';
import { skipNotice } from '../../../test/helpers/services.js';
import { BACKUP_UNITS, renderUnits, writeUnits } from './units.js';
import { readSwitches, renderUnits as installUnits } from '../install/unit-plan.js';

const analyze = findProgram('systemd-analyze');
if (!analyze) skipNotice('systemd-analyze', 'not installed');

describe('backup units (systemd-analyze calendar and verify)', () => {
  it('renders the same units mailsvc install installs (one source: deploy/systemd)', () => {
    const calendars = ['*-*-* 01:15:00', 'Sat *-*-* 12:00:00'];
    const installed = new Map(installUnits(join(REPO_ROOT, 'deploy', 'systemd'), { ...readSwitches({}, '/opt/mailsvc'), backupCalendars: calendars }).map((u) => [u.name, u.text]));
    const rendered = renderUnits(calendars, '/usr/local/bin/mailsvc');
    expect(rendered.map((u) => u.name)).toEqual([...BACKUP_UNITS]);
    for (const u of rendered) expect(u.text, u.name).toBe(installed.get(u.name));
  });

  it.skipIf(!analyze)('renders one OnCalendar= per ONCALENDAR line; systemd-analyze verify accepts all four units', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'mailsvc-units-'));
    try {
      const units = await writeUnits(['*-*-* 02:30:00', 'Sat 12:00'], dir, `${process.execPath} ${CLI_BIN}`);
      expect(units.map((u) => u.name)).toEqual(['mailsvc-backup.service', 'mailsvc-backup.timer', 'mailsvc-backup-verify.service', 'mailsvc-backup-verify.timer']);
      const timer = readFileSync(join(dir, 'mailsvc-backup.timer'), 'utf8');
      expect(timer.split('\n').filter((l) => l.startsWith('OnCalendar='))).toEqual(['OnCalendar=*-*-* 02:30:00', 'OnCalendar=Sat 12:00']);
      expect(readFileSync(join(dir, 'mailsvc-backup.service'), 'utf8')).toContain(`ExecStart=${process.execPath} ${CLI_BIN} backup run`);
      expect(readFileSync(join(dir, 'mailsvc-backup-verify.service'), 'utf8')).toContain('backup verify');
      expect(readFileSync(join(dir, 'mailsvc-backup-verify.timer'), 'utf8')).toMatch(/^OnCalendar=Sun \*-\*-\* 05:30:00$/m);
      // No settings in the units: the backup reads mailsvc.conf and root's backup-secrets.conf itself, and as root
      // stops Postfix itself (no MAILSVC_HELPER=direct needed).
      for (const name of ['mailsvc-backup.service', 'mailsvc-backup-verify.service']) {
        const text = readFileSync(join(dir, name), 'utf8');
        expect(text).not.toMatch(/^EnvironmentFile=/m);
        expect(text).not.toMatch(/^Environment=/m);
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it.skipIf(!analyze)('a line systemd cannot read is refused before anything is written', async () => {
    const dir = join(mkdtempSync(join(tmpdir(), 'mailsvc-units-')), 'out');
    await expect(writeUnits(['*-*-* 02:30:00', 'every full moon'], dir)).rejects.toThrow(/"every full moon" is not a systemd calendar expression/);
    expect(() => readFileSync(join(dir, 'mailsvc-backup.timer'))).toThrow();
  });

  it('a unit that systemd-analyze verify refuses is reported (a program that does not exist)', async () => {
    if (!analyze) return;
    const dir = mkdtempSync(join(tmpdir(), 'mailsvc-units-'));
    try {
      await expect(writeUnits(['daily'], dir, '/nonexistent/mailsvc')).rejects.toThrow(/systemd-analyze verify refused the units/);
      expect(renderUnits(['daily'], '/x')[1]?.text).toContain('Persistent=true');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
