import { api, getOnce, prefetch, qs } from '../api';
import type { ApiError } from '../api';
import { ErrorNote, Page, useLoad, when } from '../ui';
import { TrafficChart } from '../chart';
import type { Timeline } from '../chart';
import type { BackupShow } from './backups';

type Health = { status: string; degraded_by?: string[]; version: string; uptime_seconds: number; database: { dialect: string; reachable: boolean; schema_version: string | null }; redis: { configured: boolean; reachable: boolean | null } };
type Counts = Record<string, number>;
type Components = { status: string; degraded_by?: string[]; components: Record<string, { status: string; detail: string | null }> };
type DoctorCheck = { id: string; name: string; status: 'ok' | 'warn' | 'fail' | 'unknown'; detail: string; fix: string | null };
type Doctor = { status: 'ok' | 'needs_attention' | 'unknown'; summary: string; counts: Record<DoctorCheck['status'], number>; checks: DoctorCheck[] };
type DeliverabilityStatus = { domain: string; checked_at: string; ok: boolean; counts: { pass: number; fail: number; unknown: number }; failed: string[] };

const DAY = 86_400_000;
/** The last 7 UTC days, today included. */
const week = (): string => {
  const today = Date.now() - (Date.now() % DAY);
  return qs({ from: new Date(today - 6 * DAY).toISOString().slice(0, 10), to: new Date(today + DAY).toISOString().slice(0, 10), bucket: 'day' });
};
const PATHS = { health: '/health/details?components=false', components: '/health/details', doctor: '/admin/doctor', counts: '/admin/queue/counts', backups: '/admin/backups/settings', deliverability: '/dns/deliverability?limit=20', traffic: () => `/stats/timeline${week()}` };

/** Called at start-up when the panel opens on the dashboard: its requests go out beside the session check, all at once. */
export function prefetchDashboard(): void {
  for (const p of [PATHS.health, PATHS.counts, PATHS.backups, PATHS.deliverability, PATHS.traffic()]) prefetch(p);
}

/** Each card fills in as its own answer arrives: none waits for another. */
export function Dashboard() {
  const health = useLoad(() => getOnce<Health>(PATHS.health), []);
  const counts = useLoad(() => getOnce<Counts>(PATHS.counts), []);
  const backups = useLoad(() => getOnce<BackupShow>(PATHS.backups), []);
  const deliverability = useLoad(() => getOnce<{ items: DeliverabilityStatus[]; total: number }>(PATHS.deliverability), []);
  const traffic = useLoad(() => getOnce<Timeline>(PATHS.traffic()), []);
  const h = health.data;
  // The daemons' probes start a dozen processes: asked once the status is shown, so nothing waits for them.
  const components = useLoad(() => (h ? api<Components>('GET', PATHS.components) : Promise.resolve(null)), [h !== undefined]);
  // The host check runs every check at once (a few seconds): asked once the status is shown, like the daemons' probes.
  const doctor = useLoad(() => (h ? api<Doctor>('GET', PATHS.doctor) : Promise.resolve(null)), [h !== undefined]);
  const b = backups.data;
  const status = components.data?.status ?? h?.status;
  const degradedBy = (components.data ?? h)?.degraded_by ?? [];
  const notInstalled = Object.entries(components.data?.components ?? {}).filter(([, c]) => c.status === 'unknown' && /not installed/i.test(c.detail ?? '')).map(([n]) => n);
  // One answer first: what needs attention, each with where to go; "Checking…" until every source answered.
  const attention: { key: string; text: string; href?: string }[] = [
    ...Object.entries(components.data?.components ?? {}).filter(([, c]) => c.status === 'down').map(([n, c]) => ({ key: `c-${n}`, text: `${n} is down${c.detail ? ` (${c.detail})` : ''}` })),
    ...(doctor.data?.checks ?? []).filter((c) => c.status === 'fail').map((c) => ({ key: `d-${c.id}`, text: `host check failing: ${c.name}`, href: '#host-check' })),
    ...((counts.data?.deferred ?? 0) + (counts.data?.hold ?? 0) > 0 ? [{ key: 'queue', text: `${(counts.data?.deferred ?? 0) + (counts.data?.hold ?? 0)} message(s) deferred or held`, href: '#/queue' }] : []),
    ...(b?.last_verify && !b.last_verify.ok ? [{ key: 'verify', text: 'the last backup verify failed', href: '#/backups' }] : []),
    ...(b && !b.last_backup ? [{ key: 'backup', text: 'no backup yet', href: '#/backups' }] : []),
    ...(deliverability.data?.items ?? []).filter((d) => !d.ok).map((d) => ({ key: `dl-${d.domain}`, text: `${d.domain}: ${d.counts.fail} deliverability check(s) failed`, href: `#/dns?domain=${encodeURIComponent(d.domain)}` })),
  ];
  const pending = [components, doctor, counts, backups, deliverability].some((x) => x.data === undefined && x.error === null) || !components.data || !doctor.data;
  return (
    <Page title="Dashboard">
      <div class={`summary ${attention.length > 0 ? 'attention' : pending ? 'pending' : 'fine'}`} data-testid="dash-summary" role="status">
        {attention.length > 0 ? (
          <>
            <strong><span aria-hidden="true">⚠ </span>Needs attention: {attention.length}</strong>{' — '}
            {attention.map((a, i) => <span key={a.key}>{i > 0 && '; '}{a.href?.startsWith('#/') ? <a href={a.href}>{a.text}</a> : a.href ? <button type="button" class="link inline" onClick={() => document.getElementById('host-check')?.focus()}>{a.text}</button> : a.text}</span>)}
          </>
        ) : pending ? <span>Checking…</span> : <strong><span aria-hidden="true">✓ </span>Everything is fine</strong>}
      </div>
      <div class="cards">
        <div class="card">
          <h2>Health</h2>
          <ErrorNote error={health.error} />
          {!h && !health.error && <p class="muted">Loading…</p>}
          {h && (
            <dl>
              {/* The first answer leaves the daemons out; once they are probed, the status is the whole one. */}
              <dt>Status</dt><dd class={status === 'ok' ? 'ok' : 'error'} data-testid="health-status">{status}{degradedBy.length > 0 && <small data-testid="health-degraded-by"> — {degradedBy.join(', ')}</small>}</dd>
              <dt>Version</dt><dd>{h.version}</dd>
              <dt>Database</dt><dd>{h.database.dialect}, {h.database.reachable ? 'reachable' : 'unreachable'}</dd>
              <dt>Redis</dt><dd>{h.redis.configured ? (h.redis.reachable ? 'reachable' : 'unreachable') : 'not configured'}</dd>
            </dl>
          )}
          {h && !components.data && !components.error && <p class="muted" role="status">Probing the daemons…</p>}
          {components.data && (
            <ul class="plain" data-testid="components">
              {Object.entries(components.data.components).filter(([name]) => !notInstalled.includes(name)).map(([name, c]) => (
                <li key={name}>{name}: <span class={c.status === 'up' ? 'ok' : c.status === 'down' ? 'error' : 'muted'}><span aria-hidden="true">{c.status === 'up' ? '✓ ' : c.status === 'down' ? '✗ ' : '? '}</span>{c.status}</span>{c.detail && <small> — {c.detail}</small>}</li>
              ))}
            </ul>
          )}
          {notInstalled.length > 0 && <p class="muted" data-testid="not-installed">Not installed here: {notInstalled.join(', ')}</p>}
        </div>
        <div class="card wide">
          <h2 id="host-check" tabIndex={-1}>Host check</h2>
          <ErrorNote error={doctor.error} />
          {!doctor.data && !doctor.error && <p class="muted" role="status">Checking the host…</p>}
          {doctor.data && <HostCheck report={doctor.data} />}
        </div>
        <div class="card">
          <h2>Mail queue</h2>
          {absentDaemon(counts.error) ? <p class="muted" data-testid="queue-absent">{counts.error?.detail}</p> : <ErrorNote error={counts.error} />}
          {counts.data && <QueueChart counts={counts.data} />}
          {counts.data && (
            <table>
              <caption class="muted">Messages by queue</caption>
              <tbody>
                {Object.entries(counts.data).map(([q, n]) => (
                  <tr key={q}><th scope="row">{q}</th><td data-testid={`queue-${q}`}>{n}</td></tr>
                ))}
              </tbody>
            </table>
          )}
        </div>
        <div class="card">
          <h2>Last backup and verify</h2>
          <ErrorNote error={backups.error} />
          {b && (
            <dl>
              <dt>Backup</dt>
              <dd data-testid="dash-backup">{b.last_backup ? `${b.last_backup.type}, ${when(b.last_backup.completed_at)}` : 'none yet'}</dd>
              <dt>Verify</dt>
              <dd data-testid="dash-verify" class={b.last_verify ? (b.last_verify.ok ? 'ok' : 'error') : 'muted'}>{b.last_verify ? `${b.last_verify.ok ? 'OK' : 'FAILED'}, ${when(b.last_verify.verified_at)}` : 'never'}</dd>
            </dl>
          )}
          <p><a href="#/backups">Backups</a></p>
        </div>
        <div class="card">
          <h2>Deliverability</h2>
          <ErrorNote error={deliverability.error} />
          {deliverability.data && (deliverability.data.items.length === 0 ? <p class="muted">No report yet.</p> : (
            <ul class="plain" data-testid="dash-deliverability">
              {deliverability.data.items.map((d) => (
                <li key={d.domain}>
                  <a href={`#/dns?domain=${encodeURIComponent(d.domain)}`}>{d.domain}</a>: <span class={d.ok ? 'ok' : 'error'}>{d.ok ? 'OK' : `${d.counts.fail} failed`}</span>
                  {d.counts.unknown > 0 && <>, {d.counts.unknown} could not be determined</>} <small>({when(d.checked_at)})</small>
                </li>
              ))}
            </ul>
          ))}
        </div>
        <div class="card wide">
          <h2>Traffic, last 7 days</h2>
          <ErrorNote error={traffic.error} />
          {traffic.data && <TrafficChart timeline={traffic.data} title="Messages in the last 7 days" />}
          <p><a href="#/stats">Statistics</a></p>
        </div>
      </div>
    </Page>
  );
}

const LABEL: Record<DoctorCheck['status'], string> = { ok: 'OK', warn: 'Warning', fail: 'Failing', unknown: 'Could not check' };

/** `mailsvc doctor` on the dashboard: the summary first, then each failing or warning check with what to do (status in words, never by colour alone). */
function HostCheck({ report }: { report: Doctor }) {
  const attention = report.checks.filter((c) => c.status === 'fail' || c.status === 'warn').sort((a, b) => (a.status === b.status ? 0 : a.status === 'fail' ? -1 : 1));
  return (
    <>
      <p data-testid="doctor-summary" class={report.status === 'ok' ? 'ok' : report.status === 'unknown' ? 'muted' : 'error'}>
        {report.summary}
        {report.counts.unknown > 0 && report.status !== 'unknown' && <small> ({report.counts.unknown} could not be checked)</small>}
      </p>
      {attention.length > 0 && (
        <ul class="plain" data-testid="doctor-checks">
          {attention.map((c) => (
            <li key={c.id}>
              <strong class={c.status === 'fail' ? 'error' : undefined}>{LABEL[c.status]}</strong>: {c.name} — {c.detail}
              {c.fix && <><br /><small>Fix: {c.fix}</small></>}
            </li>
          ))}
        </ul>
      )}
      <p class="muted"><small>The same checks as <code>mailsvc doctor</code> on the host.</small></p>
    </>
  );
}

/** A daemon this host does not have (503: "… is not installed here" or "… is not set up here"): said once, quietly, not as an error. */
function absentDaemon(e: ApiError | null): boolean {
  return e !== null && e.status === 503 && /is not (installed|set up) here/.test(e.detail);
}

/** The queue by state as small bars (SVG drawn here; each bar carries its number in words too). */
function QueueChart({ counts }: { counts: Counts }) {
  const rows = Object.entries(counts);
  const max = Math.max(1, ...rows.map(([, n]) => n));
  return (
    <svg class="queue-chart" viewBox={`0 0 200 ${rows.length * 18}`} role="img" aria-label={`Queue: ${rows.map(([q, n]) => `${q} ${n}`).join(', ')}`} data-testid="queue-chart">
      {rows.map(([q, n], i) => (
        <g key={q}>
          <text x="0" y={i * 18 + 12} font-size="11" fill="currentColor">{q}</text>
          <rect x="70" y={i * 18 + 3} width={Math.max(n > 0 ? 2 : 0, (n / max) * 100)} height="11" class={`bar bar-${q}`} data-value={n} />
          <text x={75 + (n / max) * 100} y={i * 18 + 12} font-size="11" fill="currentColor">{n}</text>
        </g>
      ))}
    </svg>
  );
}
