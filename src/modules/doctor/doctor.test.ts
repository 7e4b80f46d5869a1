import { describe, expect, it } from 'vitest';
import { parseUnitProperties } from '../../adapters/host/host.js';
import { parseTlsPorts } from '../../config/doctor-settings.js';
import { firstRunPending, judgeTimer, timerSpecs } from './host-checks.js';
import { backupFinding, dnsLines } from './data-checks.js';
import { exitCode, report, runChecks } from './run.js';
import type { Check, Finding } from './run.js';
import type { DoctorCheck } from './schema.js';

const backup = timerSpecs({ enableSrs: false, enableDeliverability: false, enableAutoUpdates: false })[0]!;
const srs = timerSpecs({ enableSrs: false, enableDeliverability: false, enableAutoUpdates: false }).find((t) => t.id === 'timer.srs-sync')!;
const show = (text: string) => parseUnitProperties(text);

describe('the timers, judged from systemctl show', () => {
  const timer = show('LoadState=loaded\nUnitFileState=enabled\nActiveState=active\nLastTriggerUSec=Thu 2026-11-26 02:30:00 UTC\nNextElapseUSecRealtime=Fri 2026-11-27 02:30:00 UTC\n');
  it('a run that ended: ok with its end and when the next is due; failed: fail with journalctl; not enabled: warn with systemctl enable', () => {
    expect(judgeTimer(backup, timer, show('Result=success\nActiveState=inactive\nExecMainStatus=0\nExecMainExitTimestamp=Thu 2026-11-26 02:31:10 UTC\n'))).toEqual({
      status: 'ok', detail: 'enabled; the last run ended Thu 2026-11-26 02:31:10 UTC: success; next run due Fri 2026-11-27 02:30:00 UTC', fix: null,
    });
    expect(judgeTimer(backup, timer, show('Result=exit-code\nActiveState=failed\nExecMainStatus=1\nExecMainExitTimestamp=Thu 2026-11-26 02:31:10 UTC\n'))).toEqual({
      status: 'fail', detail: 'enabled; the last run (ended Thu 2026-11-26 02:31:10 UTC) ended with exit-code, exit status 1', fix: 'read journalctl -u mailsvc-backup.service, fix the cause, then systemctl start mailsvc-backup.service',
    });
    expect(judgeTimer(backup, show('LoadState=loaded\nUnitFileState=disabled\nActiveState=inactive\n'), {})).toMatchObject({ status: 'warn', fix: 'systemctl enable --now mailsvc-backup.timer' });
    expect(judgeTimer(backup, show('LoadState=not-found\n'), {})).toMatchObject({ status: 'warn', fix: expect.stringMatching(/mailsvc install/) });
    expect(judgeTimer(srs, show('LoadState=not-found\n'), {})).toMatchObject({ status: 'ok', detail: 'not installed (MAILSVC_ENABLE_SRS is off)' });
  });

  it('never ran: says so and when it is due, never "success" (systemd\'s default Result of a service that has not run)', () => {
    const fresh = show('LoadState=loaded\nUnitFileState=enabled\nActiveState=active\nLastTriggerUSec=n/a\nNextElapseUSecRealtime=Fri 2026-11-27 02:30:00 UTC\n');
    const neverRan = show('Result=success\nActiveState=inactive\nExecMainStatus=0\nExecMainStartTimestamp=\nExecMainExitTimestamp=\n');
    expect(judgeTimer(backup, fresh, neverRan)).toEqual({ status: 'ok', detail: 'enabled; never ran yet; next run due Fri 2026-11-27 02:30:00 UTC', fix: null });
    // A persistent timer remembers its last trigger across a reboot; the service's result does not survive it.
    const afterReboot = judgeTimer(backup, timer, neverRan);
    expect(afterReboot).toMatchObject({ status: 'unknown', detail: expect.stringMatching(/^enabled; last triggered Thu 2026-11-26 02:30:00 UTC, but no run has ended since systemd started .*next run due Fri/) });
    expect(afterReboot.detail).not.toMatch(/success/);
    expect(judgeTimer(backup, timer, show('Result=success\nActiveState=activating\nExecMainStartTimestamp=Thu 2026-11-26 02:30:05 UTC\n'))).toMatchObject({ status: 'ok', detail: 'enabled; running now (started Thu 2026-11-26 02:30:05 UTC)' });
  });
});

describe('the last backup', () => {
  const now = Date.parse('2026-11-29T12:00:00Z');
  it('none yet: ok on a new host whose backup timer has not fired (with when it is due), a failure otherwise; an old one warns', () => {
    expect(backupFinding(null, now, 'Mon 2026-11-30 02:33:04 UTC')).toEqual({ status: 'ok', detail: "no backup yet: the backup timer's first run is due Mon 2026-11-30 02:33:04 UTC", fix: null });
    expect(backupFinding(null, now, null)).toMatchObject({ status: 'fail', detail: 'no backup yet' });
    const old = { id: 'b1', completed_at: '2026-11-25T03:00:00Z', verify_ok: true, verified_at: '2026-11-25T04:00:00Z' };
    expect(backupFinding(old, now, 'Mon 2026-11-30 02:33:04 UTC').status).toBe('warn');
    expect(backupFinding({ ...old, completed_at: '2026-11-29T03:00:00Z' }, now).status).toBe('ok');
  });
});

describe('a timer whose first run is still to come (a new host)', () => {
  const now = Date.parse('2026-11-29T06:00:00Z');
  const timer = { LoadState: 'loaded', UnitFileState: 'enabled', ActiveState: 'active', NextElapseUSecRealtime: 'Mon 2026-11-30 02:33:04 UTC' };
  const waiting = { ActiveState: 'inactive', Result: 'success', ExecMainStartTimestamp: '' };
  it('pending when enabled, never started since boot, stamped (systemd stamps a persistent timer at its first start) less than 26 h ago', () => {
    expect(firstRunPending(timer, waiting, now - 60_000, now)).toBe('Mon 2026-11-30 02:33:04 UTC');
    expect(firstRunPending(timer, waiting, null, now)).toBe('Mon 2026-11-30 02:33:04 UTC');
  });
  it('not pending when it ran, failed, is off, or was stamped more than a day ago (it should have run since)', () => {
    expect(firstRunPending(timer, { ...waiting, ExecMainStartTimestamp: 'Sun 2026-11-29 02:30:00 UTC' }, now - 60_000, now)).toBeNull();
    expect(firstRunPending(timer, { ...waiting, ActiveState: 'failed' }, now - 60_000, now)).toBeNull();
    expect(firstRunPending({ ...timer, UnitFileState: 'disabled' }, waiting, null, now)).toBeNull();
    expect(firstRunPending(timer, waiting, now - 30 * 3600_000, now)).toBeNull();
  });
});

describe('the DNS lines', () => {
  it('a domain whose only non-passing checks are recommendations (DNSSEC, DANE in an unsigned zone) is ok, saying so; a failed check fails', () => {
    const at = '2026-11-28T10:00:00.000Z';
    const brief = { domain: 'example.org', checked_at: at, mail_host: 'mail.example.org', ok: true, counts: { pass: 11, warn: 2, fail: 0, unknown: 0 }, failed: [] };
    const [line] = dnsLines(['example.org'], [brief], Date.parse(at) + 60_000);
    expect(line).toMatchObject({ id: 'dns.example.org', status: 'ok', detail: expect.stringMatching(/^11 checks passed at .*, 2 recommended \(mailsvc dns report example\.org mail\.example\.org names them\)$/), fix: null });
    const failing = dnsLines(['example.org'], [{ ...brief, ok: false, counts: { pass: 10, warn: 2, fail: 1, unknown: 0 }, failed: ['SPF'] }], Date.parse(at))[0];
    expect(failing).toMatchObject({ status: 'fail', detail: expect.stringMatching(/^1 of 13 checks failed .*: SPF$/) });
  });
});

describe('the runner, the summary and the exit code', () => {
  const one = (id: string, status: 'ok' | 'warn' | 'fail' | 'unknown'): Check => ({ id, name: id, run: () => Promise.resolve({ status, detail: id, fix: status === 'ok' ? null : 'do it' }) });
  it('0 all ok (warnings allowed), 1 a check fails, 69 nothing could be checked', async () => {
    expect(report(await runChecks([one('a', 'ok'), one('b', 'unknown')], 1000), 0)).toMatchObject({ status: 'ok', summary: 'ok' });
    const warn = report(await runChecks([one('a', 'ok'), one('b', 'warn')], 1000), 0);
    expect(warn).toMatchObject({ status: 'needs_attention', summary: 'needs attention: 0 failing, 1 warning' });
    expect(exitCode(warn)).toBe(0);
    const failing = report(await runChecks([one('a', 'fail'), one('b', 'fail'), one('c', 'warn'), one('d', 'warn')], 1000), 0);
    expect(failing.summary).toBe('needs attention: 2 failing, 2 warnings');
    expect(exitCode(failing)).toBe(1);
    const nothing = report(await runChecks([one('a', 'unknown'), one('b', 'unknown')], 1000), 0);
    expect(nothing).toMatchObject({ status: 'unknown', summary: 'nothing could be checked' });
    expect(exitCode(nothing)).toBe(69);
  });
  it('a check that hangs is unknown at its own time limit; one that throws is unknown with the reason; the others still answer', async () => {
    const started = Date.now();
    const lines = await runChecks([
      { id: 'hangs', name: 'hangs', run: () => new Promise<Finding>(() => undefined) },
      { id: 'throws', name: 'throws', run: () => Promise.reject<Finding>(new Error('boom')) },
      { group: 'g', lines: [{ id: 'g1', name: 'g1' }, { id: 'g2', name: 'g2' }], run: () => new Promise<DoctorCheck[]>(() => undefined) },
      one('fine', 'ok'),
    ], 300);
    expect(Date.now() - started).toBeLessThan(5000);
    expect(lines).toEqual([
      { id: 'hangs', name: 'hangs', status: 'unknown', detail: 'no answer within 300 ms', fix: expect.any(String) },
      { id: 'throws', name: 'throws', status: 'unknown', detail: 'could not be checked: boom', fix: expect.any(String) },
      { id: 'g1', name: 'g1', status: 'unknown', detail: 'no answer within 300 ms', fix: expect.any(String) },
      { id: 'g2', name: 'g2', status: 'unknown', detail: 'no answer within 300 ms', fix: expect.any(String) },
      { id: 'fine', name: 'fine', status: 'ok', detail: 'fine', fix: null },
    ]);
  });
  it('MAILSVC_DOCTOR_TLS_PORTS: kind:port items or off; anything else names the setting', () => {
    expect(parseTlsPorts('smtp:25, imaps:993')).toEqual([{ kind: 'smtp', port: 25 }, { kind: 'imaps', port: 993 }]);
    expect(parseTlsPorts('off')).toEqual([]);
    expect(() => parseTlsPorts('ftp:21')).toThrow(/MAILSVC_DOCTOR_TLS_PORTS/);
    expect(() => parseTlsPorts('imaps:70000')).toThrow(/MAILSVC_DOCTOR_TLS_PORTS/);
  });
});
