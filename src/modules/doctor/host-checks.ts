import { diskUsage, systemdRunning, unitProperties } from '../../adapters/host/host.js';
import type { Finding } from './run.js';

/** The timers mailsvc installs; `wanted` says whether the installer's switches enable it. */
export type TimerSpec = { id: string; name: string; unit: string; wanted: boolean; switch?: string };

export const timerSpecs = (s: { enableSrs: boolean; enableDeliverability: boolean; enableAutoUpdates: boolean }): TimerSpec[] => [
  { id: 'timer.backup', name: 'backup timer', unit: 'mailsvc-backup', wanted: true },
  { id: 'timer.backup-verify', name: 'backup verify timer', unit: 'mailsvc-backup-verify', wanted: true },
  { id: 'timer.stats', name: 'statistics timer', unit: 'mailsvc-stats', wanted: true },
  { id: 'timer.dkim-rotate', name: 'DKIM rotation timer', unit: 'mailsvc-dkim-rotate', wanted: true },
  { id: 'timer.tls-check', name: 'certificate check timer', unit: 'mailsvc-tls-check', wanted: true },
  { id: 'timer.dns-report', name: 'deliverability timer', unit: 'mailsvc-dns-report', wanted: s.enableDeliverability, switch: 'MAILSVC_ENABLE_DELIVERABILITY_TIMER' },
  { id: 'timer.srs-sync', name: 'SRS sync timer', unit: 'mailsvc-srs-sync', wanted: s.enableSrs, switch: 'MAILSVC_ENABLE_SRS' },
  { id: 'timer.auto-update', name: 'auto-update timer', unit: 'mailsvc-auto-update', wanted: s.enableAutoUpdates, switch: 'MAILSVC_ENABLE_AUTO_UPDATES' },
];

export const TIMER_PROPS = ['LoadState', 'UnitFileState', 'ActiveState', 'LastTriggerUSec', 'NextElapseUSecRealtime'] as const;
export const SERVICE_PROPS = ['Result', 'ActiveState', 'ExecMainStatus', 'ExecMainStartTimestamp', 'ExecMainExitTimestamp'] as const;

/** A time as systemctl show prints it, or null for "never" (empty, n/a, 0). */
const dateOf = (v: string | undefined): string | null => (v === undefined || v === '' || v === 'n/a' || v === '0' ? null : v);

/**
 * A timer and its service as `systemctl show` gives them, judged. What a
 * run came to is read from the service's own exit time and result, never
 * from the timer alone: a service that never ran (or not since the last
 * boot, which a persistent timer's LastTriggerUSec outlives) still shows
 * systemd's default Result=success, which says nothing.
 */
export function judgeTimer(t: TimerSpec, timer: Record<string, string>, service: Record<string, string>): Finding {
  const enable = `systemctl enable --now ${t.unit}.timer`;
  if (timer.LoadState === 'not-found') {
    return t.wanted
      ? { status: 'warn', detail: `${t.unit}.timer is not installed`, fix: 'run mailsvc install (it writes and enables the units)' }
      : { status: 'ok', detail: `not installed (${t.switch ?? 'its switch'} is off)`, fix: null };
  }
  const enabled = timer.UnitFileState === 'enabled' && timer.ActiveState === 'active';
  if (!enabled) {
    return t.wanted
      ? { status: 'warn', detail: `${t.unit}.timer is ${timer.UnitFileState ?? 'not enabled'} and ${timer.ActiveState ?? 'inactive'}`, fix: enable }
      : { status: 'ok', detail: `not enabled (${t.switch ?? 'its switch'} is off)`, fix: null };
  }
  const next = dateOf(timer.NextElapseUSecRealtime);
  const due = next ? `; next run due ${next}` : '';
  const triggered = dateOf(timer.LastTriggerUSec);
  const ended = dateOf(service.ExecMainExitTimestamp);
  const result = service.Result ?? 'unknown';
  const journal = `read journalctl -u ${t.unit}.service, fix the cause, then systemctl start ${t.unit}.service`;
  if (service.ActiveState === 'activating' || service.ActiveState === 'active') {
    const started = dateOf(service.ExecMainStartTimestamp);
    return { status: 'ok', detail: `enabled; running now${started ? ` (started ${started})` : ''}`, fix: null };
  }
  if (result !== 'success' || service.ActiveState === 'failed') {
    const status = service.ExecMainStatus && service.ExecMainStatus !== '0' ? `, exit status ${service.ExecMainStatus}` : '';
    return { status: 'fail', detail: `enabled; the last run${ended ? ` (ended ${ended})` : ''} ended with ${result}${status}`, fix: journal };
  }
  if (!ended) {
    if (!triggered) return { status: 'ok', detail: `enabled; never ran yet${due}`, fix: null };
    return {
      status: 'unknown',
      detail: `enabled; last triggered ${triggered}, but no run has ended since systemd started (a result is not kept across a reboot)${due}`,
      fix: `wait for the next run, or run it now: systemctl start ${t.unit}.service`,
    };
  }
  return { status: 'ok', detail: `enabled; the last run ended ${ended}: success${due}`, fix: null };
}

/** One timer through systemctl; `unknown` with the reason where systemd does not run. */
export async function timerCheck(t: TimerSpec, ms: number): Promise<Finding> {
  if (!systemdRunning()) return { status: 'unknown', detail: 'systemd is not running here (no /run/systemd/system)', fix: 'run mailsvc doctor on the mail host itself, where systemd runs the units' };
  const [timer, service] = await Promise.all([unitProperties(`${t.unit}.timer`, TIMER_PROPS, ms), unitProperties(`${t.unit}.service`, SERVICE_PROPS, ms)]);
  if (!timer || !service) return { status: 'unknown', detail: 'systemctl show did not answer', fix: `look by hand: systemctl status ${t.unit}.timer` };
  return judgeTimer(t, timer, service);
}

/**
 * Whether a daily timer has not had its first run yet on a host set up less than a day ago: installed, enabled
 * and waiting, its service never started since boot, and its last trigger (systemd stamps a persistent timer
 * when it is first started) less than 26 hours old or none. Pure: `lastTrigger` is a Unix time in ms.
 */
export function firstRunPending(timer: Record<string, string>, service: Record<string, string>, lastTrigger: number | null, now: number): string | null {
  if (timer.LoadState === 'not-found' || timer.UnitFileState !== 'enabled' || timer.ActiveState !== 'active') return null;
  if (dateOf(service.ExecMainStartTimestamp) || service.ActiveState === 'failed') return null;
  if (lastTrigger !== null && now - lastTrigger > 26 * 3600_000) return null;
  return dateOf(timer.NextElapseUSecRealtime);
}

/** firstRunPending for a timer of this host, through systemctl (null where systemd does not run or answer). */
export async function firstRunDue(t: TimerSpec, ms: number, now: number): Promise<string | null> {
  if (!systemdRunning()) return null;
  const [timer, service, stamp] = await Promise.all([
    unitProperties(`${t.unit}.timer`, TIMER_PROPS, ms),
    unitProperties(`${t.unit}.service`, SERVICE_PROPS, ms),
    unitProperties(`${t.unit}.timer`, ['LastTriggerUSec'], ms, ['--timestamp=unix']),
  ]);
  if (!timer || !service) return null;
  const unix = /^@(\d+)$/.exec(stamp?.LastTriggerUSec ?? '')?.[1];
  return firstRunPending(timer, service, unix === undefined ? null : Number(unix) * 1000, now);
}

const GIB = 1024 ** 3;
const size = (b: number): string => (b >= GIB ? `${(b / GIB).toFixed(1)} GiB` : `${(b / 1024 ** 2).toFixed(0)} MiB`);

/** Space left where mailsvc keeps data: warn over MAILSVC_REPORT_DISK_PERCENT, fail at 98 % or a missing directory. */
export async function diskCheck(path: string, setting: string, warnPercent: number): Promise<Finding> {
  let u;
  try {
    u = await diskUsage(path);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return { status: 'fail', detail: `${path} does not exist`, fix: `create it, or set ${setting} to where the data is` };
    throw err;
  }
  const free = size(u.total_bytes - u.used_bytes);
  const detail = `${path}: ${u.used_percent} % used, ${free} free of ${size(u.total_bytes)}`;
  if (u.used_percent >= 98) return { status: 'fail', detail, fix: `free space on the file system of ${path} now (old backups, logs), or grow it` };
  if (u.used_percent > warnPercent) return { status: 'warn', detail: `${detail} (over ${warnPercent} %, MAILSVC_REPORT_DISK_PERCENT)`, fix: `free space on the file system of ${path}, or grow it` };
  return { status: 'ok', detail, fix: null };
}

/** This host's clock against the database's: warn over 2 s, fail over 30 s. */
export async function clockCheck(now: () => number, dbTime: () => Promise<number>): Promise<Finding> {
  const before = now();
  const db = await dbTime();
  const after = now();
  const skew = db - (before + after) / 2;
  const seconds = Math.abs(skew) / 1000;
  const text = `${seconds.toFixed(1)} s ${skew > 0 ? 'behind' : 'ahead of'} the database`;
  const fix = 'synchronise the clocks of this host and the database host (timedatectl set-ntp true, or chrony)';
  if (seconds > 30) return { status: 'fail', detail: `this host's clock is ${text}`, fix };
  if (seconds > 2) return { status: 'warn', detail: `this host's clock is ${text}`, fix };
  return { status: 'ok', detail: `within ${Math.max(seconds, 0.1).toFixed(1)} s of the database`, fix: null };
}
