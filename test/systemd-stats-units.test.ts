import { describe, expect, it } from 'vitest';
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { CLI_BIN, REPO_ROOT } from './helpers/cli.js';
import { findProgram } from './helpers/mail-daemons.js';
import { skipNotice } from './helpers/services.js';

const execFileP = promisify(execFile);
const UNITS = join(REPO_ROOT, 'deploy/systemd');
const analyze = findProgram('systemd-analyze');
if (!analyze) skipNotice('systemd-analyze', 'not installed');

/** The stats timer and its service as shipped, ExecStart pointing at this checkout's CLI (verify checks that it exists). */
function render(): string {
  const dir = mkdtempSync(join(tmpdir(), 'mailsvc-stats-units-'));
  for (const name of ['mailsvc-stats.service', 'mailsvc-stats.timer']) {
    writeFileSync(join(dir, name), readFileSync(join(UNITS, name), 'utf8').replaceAll('ExecStart=/usr/local/bin/mailsvc ', `ExecStart=${process.execPath} ${CLI_BIN} `));
  }
  return dir;
}

describe('the stats collect timer (deploy/systemd)', () => {
  it.skipIf(!analyze)('systemd-analyze verify accepts mailsvc-stats.service and mailsvc-stats.timer', async () => {
    const dir = render();
    const r = await execFileP(analyze ?? 'systemd-analyze', ['verify', join(dir, 'mailsvc-stats.timer'), join(dir, 'mailsvc-stats.service')], { timeout: 30_000 }).then(
      (x) => ({ code: 0, out: x.stdout + x.stderr }),
      (e: { code?: number; stdout?: string; stderr?: string }) => ({ code: e.code ?? -1, out: (e.stdout ?? '') + (e.stderr ?? '') }),
    );
    expect(r.out.trim()).toBe('');
    expect(r.code).toBe(0);
  });

  it('runs stats collect as mailsvc, every 5 minutes, catching up after downtime', () => {
    const service = readFileSync(join(UNITS, 'mailsvc-stats.service'), 'utf8');
    const timer = readFileSync(join(UNITS, 'mailsvc-stats.timer'), 'utf8');
    expect(service).toMatch(/^ExecStart=\/usr\/local\/bin\/mailsvc stats collect$/m);
    expect(service).toMatch(/^User=mailsvc$/m);
    // adm reads /var/log/mail.log and (Debian's ACL) the journal; systemd-journal the journal where the ACL is missing.
    expect(service).toMatch(/^SupplementaryGroups=adm systemd-journal$/m);
    expect(service).toMatch(/^Type=oneshot$/m);
    expect(timer).toMatch(/^OnCalendar=\*:0\/5$/m);
    expect(timer).toMatch(/^Persistent=true$/m);
    expect(timer).toMatch(/^Unit=mailsvc-stats\.service$/m);
  });
});
