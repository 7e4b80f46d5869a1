import { useState } from 'preact/hooks';
import { api } from '../api';
import { ErrorNote, JobProgress, Page, useAction, useJob, when } from '../ui';
import type { Job } from '../ui';
import { List, useVersion } from '../list';

type Proof = { ok: boolean; ports: { service: string; port: number; matches: boolean; detail?: string }[] };
type Cert = {
  name: string;
  names: string[];
  state: 'none' | 'valid' | 'expiring' | 'expired' | 'revoked';
  not_after: string | null;
  days_left: number | null;
  renew_at: string | null;
  last_error: string | null;
  next_attempt_at: string | null;
  proof: Proof | null;
  /** A certificate with a new key held back until its DANE record is published and the TTL has passed. */
  pending: { sha256: string; issued_at: string | null } | null;
};

type RenewOutcome = { name: string; action: 'renewed' | 'skipped' | 'failed'; detail: string };
/** A failed certificate job keeps its error's code (rate_limited, unavailable, upstream, conflict) in its result. */
type Failure = { error?: { code?: string; retry_after?: number } };

/** What the ended job did, in one line: the certificate issued, each renewal's outcome, or the error with its code. */
function jobOutcome(job: Job<Cert | RenewOutcome[] | Failure>): { ok: boolean; text: string } | null {
  if (job.state === 'failed') {
    const e = (job.result as Failure | null)?.error;
    const code = e?.code ? ` (${e.code}${e.retry_after ? `, the CA asks to wait ${e.retry_after} s` : ''})` : '';
    return { ok: false, text: `${job.kind === 'cert-issue' ? 'Issuing' : 'Renewing'} failed${code}: ${job.message}` };
  }
  if (job.state !== 'succeeded' || job.result === null) return null;
  if (Array.isArray(job.result)) {
    const out = job.result;
    if (out.length === 0) return { ok: true, text: 'No certificates to renew: set MAILSVC_MAIL_HOSTNAME first.' };
    return { ok: out.every((o) => o.action !== 'failed'), text: out.map((o) => `${o.name}: ${o.action} (${o.detail})`).join('; ') };
  }
  const c = job.result as Cert;
  return { ok: true, text: c.pending ? `Certificate ${c.name} issued, held back for its DANE record.` : `Certificate ${c.name} issued and proven on every port.` };
}

/** The ACME certificates: state, when each renews, the last proof on the wire; issue and renew (jobs, followed here), revoke. */
export function Certs() {
  const [version, reload] = useVersion();
  const act = useAction();
  const [jobId, setJobId] = useState<string | null>(null);
  const job = useJob<Cert | RenewOutcome[] | Failure>(jobId, reload);
  const working = act.busy || (job !== null && (job.state === 'queued' || job.state === 'running'));
  const run = (method: 'POST', path: string, body?: object) => void act.run(async () => (await api(method, path, body), reload()));
  // Issue and renew answer 202 with a job: the page follows it (its progress, then its outcome) and reloads the list at its end.
  const start = (path: string) => void act.run(async () => setJobId((await api<{ job_id: string }>('POST', path, {})).job_id));
  const outcome = job ? jobOutcome(job) : null;

  return (
    <Page title="Certificates">
      <p>
        Certificates come from the ACME CA for the mail host, the panel and the configured per-domain names. A new one is taken only when every TLS port
        serves it; until then the previous one stays.
      </p>
      <div>
        <button type="button" disabled={working} onClick={() => start('/admin/certs/issue')}>Issue the mail certificate now</button>{' '}
        <button type="button" class="secondary" disabled={working} onClick={() => start('/admin/certs/renew')}>Renew what is due</button>
      </div>
      <JobProgress job={job} label="Certificate progress" />
      {outcome ? <p class={outcome.ok ? 'ok' : 'error'} role="status" data-testid="cert-job-outcome">{outcome.text}</p> : null}
      <ErrorNote error={act.error} />
      <List<Cert>
        label="Certificates"
        path="/admin/certs"
        version={version}
        rowKey={(c) => c.name}
        empty="No certificates yet: set MAILSVC_MAIL_HOSTNAME, then issue one."
        columns={[
          { title: 'Name', cell: (c) => c.name },
          { title: 'Holds', cell: (c) => c.names.join(', ') },
          { title: 'State', cell: (c) => <span class={c.state === 'valid' ? 'ok' : 'error'}>{c.state}</span> },
          { title: 'Valid until', cell: (c) => (c.not_after ? `${when(c.not_after)} (${c.days_left ?? '?'} days)` : '—') },
          {
            title: 'Renews',
            cell: (c) => (
              <>
                {c.renew_at ? when(c.renew_at) : '—'}
                {c.pending ? <small> (a certificate with a new key waits for its DANE record; the renewal check deploys it)</small> : null}
              </>
            ),
          },
          { title: 'Proven on', cell: (c) => (c.proof ? c.proof.ports.map((p) => `${p.service}:${p.port} ${p.matches ? '✓' : '✗'}`).join(' ') : '—') },
          { title: 'Last failure', cell: (c) => (c.last_error ? <small>{c.last_error}{c.next_attempt_at ? ` (next try ${when(c.next_attempt_at)})` : ''}</small> : '—') },
          {
            title: 'Actions',
            cell: (c) =>
              c.state === 'none' || c.state === 'revoked' ? (
                '—'
              ) : (
                <button type="button" class="secondary" disabled={working} onClick={() => run('POST', `/admin/certs/${encodeURIComponent(c.name)}/revoke`, {})}>
                  Revoke <span class="visually-hidden">{c.name}</span>
                </button>
              ),
          },
        ]}
      />
    </Page>
  );
}
