/**
 * `mailsvc install --root DIR`: the bundled CLI renders the installation into
 * a directory; every unit passes `systemd-analyze verify` and every calendar
 * `systemd-analyze calendar`; re-running re-renders the timers from the
 * switches and keeps the settings file; uninstall removes the units and keeps data.
 */
import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { readSettingsFile } from '../../config/settings-file.js';
import { afterAll, describe, expect, it } from 'vitest';
import { CLI_BIN, buildCli, runCli } from '../../../test/helpers/cli.js';
import { skipNotice } from '../../../test/helpers/services.js';
import { calendarsOf } from './unit-plan.js';

const execFileP = promisify(execFile);
const analyzer = existsSync('/usr/bin/systemd-analyze') ? '/usr/bin/systemd-analyze' : null;
if (!analyzer) skipNotice('systemd-analyze', 'not installed');

async function analyze(args: string[]): Promise<{ code: number; out: string }> {
  try {
    const r = await execFileP(analyzer ?? 'systemd-analyze', args, { timeout: 60_000 });
    return { code: 0, out: r.stdout + r.stderr };
  } catch (err) {
    const e = err as { code?: number; stdout?: string; stderr?: string };
    return { code: e.code ?? -1, out: (e.stdout ?? '') + (e.stderr ?? '') };
  }
}

describe('mailsvc install --root', () => {
  const dir = mkdtempSync(join(tmpdir(), 'mailsvc-install-'));
  const root = join(dir, 'root');
  const units = join(root, 'etc/systemd/system');
  const env = (extra: Record<string, string> = {}) => ({ MAILSVC_DATA_DIR: join(dir, 'data'), MAILSVC_CONFIG_FILE: join(dir, 'data/mailsvc.conf'), MAILSVC_INSTALL_ROOT: '/opt/mailsvc', ...extra });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('renders the units, the settings file and the command link, and says what is left', async () => {
    buildCli();
    const r = await runCli(['install', '--root', root, '--json'], { env: env({ MAILSVC_BACKUP_ONCALENDAR: '*-*-* 01:15:00;Sat *-*-* 12:00:00' }) });
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const report = JSON.parse(r.stdout) as { done: string[]; skipped: string[]; left: string[] };
    expect(report.left.join('\n')).toMatch(/admin set-password/);
    expect(report.left.join('\n')).toMatch(/nginx/);
    // What it wrote is named where it wrote it: under DIR, not at the host's paths.
    expect(report.done.join('\n')).toContain(`wrote the settings file ${join(root, 'etc/mailsvc/mailsvc.conf')}`);
    expect(report.done.join('\n')).toContain(`rendered 17 units into ${units}`);
    expect(report.done.join('\n')).not.toMatch(/(^|[\s,])\/etc\//m);
    expect(readdirSync(units).sort()).toEqual([
      'mailsvc-backup-verify.service', 'mailsvc-backup-verify.timer', 'mailsvc-backup.service', 'mailsvc-backup.timer', 'mailsvc-backup@.service',
      'mailsvc-certs-renew.service', 'mailsvc-certs-renew.timer', 'mailsvc-dkim-rotate.service', 'mailsvc-dkim-rotate.timer',
      'mailsvc-helper.service', 'mailsvc-helper.socket', 'mailsvc-stats.service', 'mailsvc-stats.timer',
      'mailsvc-tls-check.service', 'mailsvc-tls-check.timer',
      'mailsvc-update@.service', 'mailsvc.service',
    ]);
    expect(calendarsOf(readFileSync(join(units, 'mailsvc-backup.timer'), 'utf8'))).toEqual(['*-*-* 01:15:00', 'Sat *-*-* 12:00:00']);
    expect(readFileSync(join(root, 'etc/mailsvc/mailsvc.conf'), 'utf8')).toMatch(/^MAILSVC_INSTALL_ROOT=\/opt\/mailsvc$/m);
    // A new install serves the panel (the built-in default, with no line, stays no).
    expect(readSettingsFile(join(root, 'etc/mailsvc/mailsvc.conf')).MAILSVC_ENABLE_WEB_PANEL).toBe('yes');
    expect(existsSync(join(root, 'usr/local/bin/mailsvc'))).toBe(false); // a link to the release that is not in this tree
  }, 60_000);

  it('re-running follows the switches: new calendar, SRS, deliverability and auto-update timers; the settings file is kept', async () => {
    writeFileSync(join(root, 'etc/mailsvc/mailsvc.conf'), '# edited by the administrator\n');
    const r = await runCli(['install', '--root', root], {
      env: env({ MAILSVC_BACKUP_ONCALENDAR: 'daily', MAILSVC_ENABLE_SRS: 'yes', MAILSVC_ENABLE_DELIVERABILITY_TIMER: 'yes', MAILSVC_ENABLE_AUTO_UPDATES: 'yes' }),
    });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/kept the settings file/);
    expect(readFileSync(join(root, 'etc/mailsvc/mailsvc.conf'), 'utf8')).toBe('# edited by the administrator\n');
    expect(calendarsOf(readFileSync(join(units, 'mailsvc-backup.timer'), 'utf8'))).toEqual(['daily']);
    for (const t of ['mailsvc-srs-sync', 'mailsvc-dns-report', 'mailsvc-auto-update']) {
      expect(existsSync(join(units, `${t}.timer`))).toBe(true);
      expect(existsSync(join(units, `${t}.service`))).toBe(true);
    }
    expect(readFileSync(join(units, 'mailsvc-auto-update.service'), 'utf8')).toMatch(/^ExecStart=\/usr\/local\/bin\/mailsvc settings apply-update --auto$/m);
  }, 60_000);

  it.skipIf(!analyzer)('every unit passes systemd-analyze verify and every calendar systemd-analyze calendar', async () => {
    // verify checks that ExecStart's program exists: point it at this checkout's CLI, as test/systemd-units.test.ts does.
    const check = mkdtempSync(join(dir, 'verify-'));
    const names = readdirSync(units);
    const files: string[] = [];
    for (const n of names) {
      const text = readFileSync(join(units, n), 'utf8').replaceAll('ExecStart=/usr/local/bin/mailsvc ', `ExecStart=${process.execPath} ${CLI_BIN} `);
      // A template is verified as one of its instances.
      const file = join(check, n.replace('@.', '@0123abcd.'));
      writeFileSync(file, text);
      files.push(file);
    }
    const v = await analyze(['verify', ...files]);
    expect(v.out.trim()).toBe('');
    expect(v.code).toBe(0);
    const calendars = names.filter((n) => n.endsWith('.timer')).flatMap((n) => calendarsOf(readFileSync(join(units, n), 'utf8')));
    expect(calendars.length).toBeGreaterThanOrEqual(6);
    for (const c of calendars) {
      const r = await analyze(['calendar', c]);
      expect(r.code, `${c}: ${r.out}`).toBe(0);
    }
    // And a bad expression is caught by the same check (the test would not pass with any text).
    expect((await analyze(['calendar', 'every other tuesday'])).code).not.toBe(0);
  }, 120_000);

  it('turning a switch off removes its timer; uninstall removes the units and keeps the settings', async () => {
    const r = await runCli(['install', '--root', root], { env: env({ MAILSVC_ENABLE_SRS: 'no' }) });
    expect(r.code, r.stderr).toBe(0);
    expect(existsSync(join(units, 'mailsvc-srs-sync.timer'))).toBe(false);
    expect(existsSync(join(units, 'mailsvc-srs-sync.service'))).toBe(false);
    const u = await runCli(['uninstall', '--root', root, '--json'], { env: env() });
    expect(u.code, u.stderr).toBe(0);
    expect(readdirSync(units)).toEqual([]);
    expect(existsSync(join(root, 'etc/mailsvc/mailsvc.conf'))).toBe(true);
    expect((JSON.parse(u.stdout) as { left: string[] }).left.join(' ')).toMatch(/kept the data/);
  }, 60_000);
});

describe('mailsvc install --root: the group postdrop', () => {
  const dir = mkdtempSync(join(tmpdir(), 'mailsvc-install-postdrop-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  const render = async (root: string): Promise<string> => {
    buildCli();
    const r = await runCli(['install', '--root', root, '--json'], { env: { MAILSVC_DATA_DIR: join(dir, 'data'), MAILSVC_CONFIG_FILE: join(dir, 'data/mailsvc.conf'), MAILSVC_INSTALL_ROOT: '/opt/mailsvc' } });
    expect(r.code, r.stderr).toBe(0);
    return readFileSync(join(root, 'etc/systemd/system/mailsvc.service'), 'utf8');
  };

  it('is given to the service where it exists (postqueue reaches showq only as postdrop), and left out where it does not', async () => {
    const withPostfix = join(dir, 'with');
    mkdirSync(join(withPostfix, 'etc'), { recursive: true });
    writeFileSync(join(withPostfix, 'etc/group'), 'root:x:0:\npostdrop:x:121:\n');
    expect(await render(withPostfix)).toMatch(/^Group=mailsvc\nSupplementaryGroups=postdrop$/m);
    // A group that does not exist would stop the unit from starting.
    expect(await render(join(dir, 'without'))).not.toMatch(/SupplementaryGroups/);
  });
});
