import type { Finding } from './run.js';
import type { DoctorCheck } from './schema.js';

const DAY = 86_400_000;
const fmt = (ms: number): string => new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');
const ago = (ms: number): string => {
  const days = Math.floor(ms / DAY);
  if (days >= 1) return `${days} day${days === 1 ? '' : 's'} ago`;
  const hours = Math.floor(ms / 3_600_000);
  return hours >= 1 ? `${hours} hour${hours === 1 ? '' : 's'} ago` : 'less than an hour ago';
};

/** A row of `limits show`: the stored value, what the daemon runs with, and whether they differ. */
export type DriftRow = { key: string; value: number; in_force: number | null; drift: boolean; applies_to: readonly string[] };

/** The daemons configured the way mailsvc renders them: `limits show`'s comparison of each limit with the value in force. */
export function driftFinding(rows: readonly DriftRow[]): Finding {
  const daemonRows = rows.filter((r) => r.applies_to.some((t) => t !== 'service'));
  const read = daemonRows.filter((r) => r.in_force !== null);
  if (read.length === 0) {
    return { status: 'unknown', detail: 'no daemon value could be read (the daemons are not installed or not running here)', fix: 'install and start the daemons, then run mailsvc limits show' };
  }
  const drifting = rows.filter((r) => r.drift);
  if (drifting.length > 0) {
    const list = drifting.map((r) => `${r.key} ${r.value}, in force ${String(r.in_force)} (${r.applies_to.filter((t) => t !== 'service').join(', ')})`).join('; ');
    return { status: 'fail', detail: `${drifting.length} limit${drifting.length === 1 ? ' differs' : 's differ'} from what the daemons run with: ${list}`, fix: 'run mailsvc limits apply (it renders, checks and reloads the daemons)' };
  }
  return { status: 'ok', detail: `the ${read.length} limit${read.length === 1 ? '' : 's'} read from the daemons match what mailsvc renders`, fix: null };
}

export type LastBackup = { id: string; completed_at: string; verify_ok: boolean | null; verified_at: string | null } | null;

/**
 * The newest complete backup: there is one, and it is recent (the timer runs daily). None yet is a failure,
 * except on a new host whose backup timer has not fired yet (`firstDue`: when its first run is due).
 */
export function backupFinding(last: LastBackup, now: number, firstDue: string | null = null): Finding {
  if (!last && firstDue) return { status: 'ok', detail: `no backup yet: the backup timer's first run is due ${firstDue}`, fix: null };
  if (!last) return { status: 'fail', detail: 'no backup yet', fix: 'run mailsvc backup run --full, and enable mailsvc-backup.timer (mailsvc install does)' };
  const age = now - Date.parse(last.completed_at);
  const detail = `backup ${last.id}, completed ${fmt(Date.parse(last.completed_at))} (${ago(age)})`;
  if (age > 2 * DAY) return { status: 'warn', detail: `the newest ${detail}`, fix: 'look at mailsvc-backup.timer: systemctl status mailsvc-backup.timer; journalctl -u mailsvc-backup.service' };
  return { status: 'ok', detail, fix: null };
}

/** The last verify of the newest backup. */
export function verifyFinding(last: LastBackup, now: number): Finding {
  if (!last) return { status: 'unknown', detail: 'no backup to verify', fix: 'run mailsvc backup run --full, then mailsvc backup verify' };
  if (last.verify_ok === null || last.verified_at === null) return { status: 'warn', detail: `backup ${last.id} is not verified yet`, fix: 'run mailsvc backup verify (mailsvc-backup-verify.timer does it weekly)' };
  const when = `${fmt(Date.parse(last.verified_at))} (${ago(now - Date.parse(last.verified_at))})`;
  if (!last.verify_ok) return { status: 'fail', detail: `the verify of backup ${last.id} failed at ${when}`, fix: 'run mailsvc backup show for its problems, then mailsvc backup run --full and mailsvc backup verify' };
  return { status: 'ok', detail: `backup ${last.id} verified at ${when}`, fix: null };
}

/** The newest deliverability report of a domain, in brief (GET /dns/deliverability). */
export type DeliverabilityBrief = { domain: string; checked_at: string; mail_host: string; ok: boolean; counts: { pass: number; warn: number; fail: number; unknown: number }; failed: string[] };

/** The DNS plan published: each active domain's newest deliverability report. */
export function dnsLines(domains: readonly string[], reports: readonly DeliverabilityBrief[], now: number): DoctorCheck[] {
  if (domains.length === 0) return [{ id: 'dns', name: 'DNS records published', status: 'ok', detail: 'no active domain yet', fix: null }];
  const by = new Map(reports.map((r) => [r.domain, r]));
  return domains.map((d): DoctorCheck => {
    const base = { id: `dns.${d}`, name: `DNS records of ${d}` };
    const r = by.get(d);
    if (!r) return { ...base, status: 'warn', detail: 'no deliverability report yet', fix: `run mailsvc dns report ${d} <mail host> (after publishing mailsvc dns plan ${d} <mail host>)` };
    const when = `${fmt(Date.parse(r.checked_at))} (${ago(now - Date.parse(r.checked_at))})`;
    const again = `mailsvc dns report ${d} ${r.mail_host}`;
    if (r.counts.fail > 0) {
      return { ...base, status: 'fail', detail: `${r.counts.fail} of ${r.counts.pass + r.counts.warn + r.counts.fail + r.counts.unknown} checks failed at ${when}: ${r.failed.join(', ')}`, fix: `publish the records of mailsvc dns plan ${d} ${r.mail_host}, then run ${again}` };
    }
    if (r.counts.pass === 0) return { ...base, status: 'unknown', detail: `no check could be determined at ${when}`, fix: `check MAILSVC_DNS_RESOLVER, then run ${again}` };
    if (now - Date.parse(r.checked_at) > 8 * DAY) return { ...base, status: 'warn', detail: `the newest report is from ${when}`, fix: `run ${again} (MAILSVC_ENABLE_DELIVERABILITY_TIMER=yes runs it daily)` };
    const unknown = r.counts.unknown > 0 ? `, ${r.counts.unknown} could not be determined` : '';
    // A recommendation (DNSSEC, DANE in an unsigned zone) is said, never a problem of the host.
    const recommended = r.counts.warn > 0 ? `, ${r.counts.warn} recommended (mailsvc dns report ${d} ${r.mail_host} names them)` : '';
    return { ...base, status: 'ok', detail: `${r.counts.pass} checks passed at ${when}${recommended}${unknown}`, fix: null };
  });
}
