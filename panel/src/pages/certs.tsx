import { api } from '../api';
import { ErrorNote, Page, useAction, when } from '../ui';
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

/** The ACME certificates: state, when each renews, the last proof on the wire; issue, renew what is due, revoke. */
export function Certs() {
  const [version, reload] = useVersion();
  const act = useAction();
  const run = (method: 'POST', path: string, body?: object) => void act.run(async () => (await api(method, path, body), reload()));

  return (
    <Page title="Certificates">
      <p>
        Certificates come from the ACME CA for the mail host, the panel and the configured per-domain names. A new one is taken only when every TLS port
        serves it; until then the previous one stays.
      </p>
      <div>
        <button type="button" disabled={act.busy} onClick={() => run('POST', '/admin/certs/issue', {})}>Issue the mail certificate now</button>{' '}
        <button type="button" class="secondary" disabled={act.busy} onClick={() => run('POST', '/admin/certs/renew', {})}>Renew what is due</button>
      </div>
      {act.busy ? <p role="status">Working with the CA…</p> : null}
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
                <button type="button" class="secondary" disabled={act.busy} onClick={() => run('POST', `/admin/certs/${encodeURIComponent(c.name)}/revoke`, {})}>
                  Revoke <span class="visually-hidden">{c.name}</span>
                </button>
              ),
          },
        ]}
      />
    </Page>
  );
}
