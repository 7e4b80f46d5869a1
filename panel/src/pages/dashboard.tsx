import { api } from '../api';
import { ErrorNote, Page, useLoad } from '../ui';

type Health = { status: string; version: string; uptime_seconds: number; database: { dialect: string; reachable: boolean; schema_version: string | null }; redis: { configured: boolean; reachable: boolean | null } };
type Counts = Record<string, number>;

/** A slot for an area whose API is not there yet. */
function Later({ title }: { title: string }) {
  return (
    <div class="card">
      <h2>{title}</h2>
      <p class="muted">Not available yet in this version.</p>
    </div>
  );
}

export function Dashboard() {
  const health = useLoad(() => api<Health>('GET', '/health/details'), []);
  const counts = useLoad(() => api<Counts>('GET', '/admin/queue/counts'), []);
  const h = health.data;
  return (
    <Page title="Dashboard">
      <div class="cards">
        <div class="card">
          <h2>Health</h2>
          <ErrorNote error={health.error} />
          {h && (
            <dl>
              <dt>Status</dt><dd class={h.status === 'ok' ? 'ok' : 'error'} data-testid="health-status">{h.status}</dd>
              <dt>Version</dt><dd>{h.version}</dd>
              <dt>Database</dt><dd>{h.database.dialect}, {h.database.reachable ? 'reachable' : 'unreachable'}</dd>
              <dt>Redis</dt><dd>{h.redis.configured ? (h.redis.reachable ? 'reachable' : 'unreachable') : 'not configured'}</dd>
            </dl>
          )}
        </div>
        <div class="card">
          <h2>Mail queue</h2>
          <ErrorNote error={counts.error} />
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
        <Later title="Last backup and verify" />
        <Later title="Deliverability" />
        <Later title="Traffic, last 7 days" />
      </div>
    </Page>
  );
}
