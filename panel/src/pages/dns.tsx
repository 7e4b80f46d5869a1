import { useEffect, useState } from 'preact/hooks';
import { api, ApiError, qs } from '../api';
import { described, ErrorNote, Field, FieldMessage, firstOf, formErrors, JobProgress, Page, useAction, useJob, useLoad, when } from '../ui';
import { useVersion } from '../list';

type DnsRecord = { name: string; type: string; ttl: number; value: string | null; purpose: string; where: 'zone' | 'reverse-zone' };
type Plan = { domain: string; mail_host: string; public_ip: string | null; records: DnsRecord[]; zone: string };
type DkimKey = { selector: string; algorithm: string; bits: number; state: string; record_name: string; created_at: string; activated_at: string | null };
type DkimResult = { domain: string; keys: DkimKey[]; signing: { status: string; detail: string; reloaded: boolean }; rotation?: { step: string; new_selector: string; waiting: string | null; wait_until: string | null } };
type Check = { id: string; name: string; status: 'pass' | 'warn' | 'fail' | 'unknown'; detail: string; fix: string | null };
export type Report = { id: string; domain: string; mail_host: string; checked_at: string; ok: boolean; counts: { pass: number; warn: number; fail: number; unknown: number }; checks: Check[]; changes: { name: string; from: string | null; to: string }[] };
type Sync = { zone_id: string; api_token_set: boolean; enabled: boolean; last_sync_at: string | null };
type SyncChange = { action: string; name: string; type: string; content: string; previous: string | null; reason: string };
type SyncResult = { dry_run: boolean; changes: SyncChange[]; changed: number; verified: boolean };

export const STATUS_TEXT = { pass: 'pass', warn: 'recommended', fail: 'fail', unknown: 'could not determine' } as const;

const param = (name: string): string => new URLSearchParams(location.hash.split('?')[1] ?? '').get(name) ?? '';
const enc = encodeURIComponent;
/** How many matches the domain picker lists at once. */
const PICK = 50;
/** A 404 is "nothing yet", not an error. */
const orNull = <T,>(p: Promise<T>): Promise<T | null> => p.catch((e: unknown) => (e instanceof ApiError && e.status === 404 ? null : Promise.reject(e)));

/** DNS of one domain: the plan, DKIM keys, the deliverability check and its last report, and the Cloudflare sync. */
export function Dns() {
  const [search, setSearch] = useState('');
  const [query, setQuery] = useState('');
  // The API finds and pages: the picker lists the first PICK matches of what is typed, so any domain can be picked.
  const domains = useLoad(() => api<{ items: { name: string }[]; total: number }>('GET', `/domains${qs({ q: query, limit: PICK })}`), [query]);
  const [domain, setDomain] = useState(param('domain'));
  const [form, setForm] = useState({ mail_host: '', public_ip: '' });
  const [applied, setApplied] = useState({ mail_host: '', public_ip: '' });
  // The plan's error naming the domain, the mail host or the IP shows at that input.
  const [planError, setPlanError] = useState<ApiError | null>(null);
  // So does a refused deliverability check (it sends the same mail host and IP).
  const [checkError, setCheckError] = useState<ApiError | null>(null);
  const planErrors = firstOf(formErrors(planError, ['domain', 'mail_host', 'public_ip']), formErrors(checkError, ['domain', 'mail_host', 'public_ip']));
  const searchErrors = formErrors(domains.error, ['q'], { primary: 'q' });
  const found = domains.data?.items ?? [];
  // The chosen domain stays in the picker when a search does not find it.
  const options = domain && !found.some((d) => d.name === domain) ? [{ name: domain }, ...found] : found;
  useEffect(() => {
    if (!domain && domains.data?.items[0]) setDomain(domains.data.items[0].name);
  }, [domains.data]);
  useEffect(() => {
    const host = domain ? `mail.${domain}` : '';
    setForm({ mail_host: host, public_ip: '' });
    setApplied({ mail_host: host, public_ip: '' });
  }, [domain]);

  return (
    <Page title="DNS">
      <form class="row" aria-label="Domain search" role="search" onSubmit={(e) => (e.preventDefault(), setQuery(search.trim()))}>
        <Field label="Find a domain" name="q" value={search} onInput={setSearch} errors={searchErrors} hint="part of its name" />
        <button type="submit" class="secondary">Find</button>
      </form>
      <form class="row" aria-label="Domain and mail host" onSubmit={(e) => (e.preventDefault(), setApplied({ mail_host: form.mail_host.trim(), public_ip: form.public_ip.trim() }))}>
        <div class="field">
          <label for="dns-domain">Domain</label>
          <select id="dns-domain" name="domain" value={domain} {...described('dns-domain', planErrors.at('domain'), domains.data !== undefined)} onChange={(e) => setDomain((e.currentTarget as HTMLSelectElement).value)}>
            {!domain && <option value="">—</option>}
            {options.map((d) => <option key={d.name} value={d.name}>{d.name}</option>)}
          </select>
          <FieldMessage id="dns-domain" message={planErrors.at('domain')} hint={domains.data && (domains.data.total > found.length ? `${found.length} of ${domains.data.total} matches: find to narrow` : `${domains.data.total} match${domains.data.total === 1 ? '' : 'es'}`)} />
        </div>
        <Field label="Mail host (MX target)" name="mail_host" value={form.mail_host} onInput={(v) => setForm({ ...form, mail_host: v })} errors={planErrors} required />
        <Field label="Public IP (optional)" name="public_ip" value={form.public_ip} onInput={(v) => setForm({ ...form, public_ip: v })} errors={planErrors} hint="for the A/AAAA and PTR records" />
        <button type="submit" class="secondary">Use</button>
      </form>
      {domains.data && domains.data.total === 0 && !query && <p class="muted">Add a domain first.</p>}
      {domain && applied.mail_host && <DomainDns key={`${domain} ${applied.mail_host} ${applied.public_ip}`} domain={domain} mailHost={applied.mail_host} publicIp={applied.public_ip} onPlanError={setPlanError} onCheckError={setCheckError} />}
    </Page>
  );
}

function DomainDns({ domain, mailHost, publicIp, onPlanError, onCheckError }: { domain: string; mailHost: string; publicIp: string; onPlanError: (e: ApiError | null) => void; onCheckError: (e: ApiError | null) => void }) {
  const [version, reload] = useVersion();
  const plan = useLoad(() => api<Plan>('GET', `/domains/${enc(domain)}/dns-plan${qs({ mail_host: mailHost, public_ip: publicIp })}`), [version]);
  useEffect(() => onPlanError(plan.error), [plan.error]);
  // What names none of the inputs above shows here.
  const planNote = formErrors(plan.error, ['domain', 'mail_host', 'public_ip']).note;
  const hasDkim = plan.data?.records.some((r) => r.name.includes('._domainkey.')) ?? false;
  const dkim = useAction();
  const [dkimResult, setDkimResult] = useState<DkimResult | null>(null);
  const makeKeys = () => void dkim.run(async () => (setDkimResult(await api<DkimResult>('POST', `/domains/${enc(domain)}/dkim`, {})), reload()));

  return (
    <>
      <section aria-labelledby="plan-h">
        <h2 id="plan-h">Records to publish</h2>
        {planNote && <p class="error" role="alert">{planNote}</p>}
        {!plan.data && !plan.error && <p role="status" class="muted">Loading…</p>}
        {plan.data && (
          <>
            <div class="table-wrap" tabIndex={0} role="region" aria-label="DNS records (scrolls sideways on small screens)">
              <table>
                <caption class="visually-hidden">DNS records of {domain}</caption>
                <thead><tr><th scope="col">Name</th><th scope="col">Type</th><th scope="col">TTL</th><th scope="col">Value</th><th scope="col">Purpose</th></tr></thead>
                <tbody>
                  {plan.data.records.map((r) => (
                    <tr key={`${r.name} ${r.type} ${r.value ?? ''}`}>
                      <td class="break">{r.name}</td>
                      <td>{r.type}</td>
                      <td>{r.ttl}</td>
                      <td class="break"><code>{r.value ?? '(your public IP)'}</code></td>
                      <td>{r.purpose}{r.where === 'reverse-zone' && <small> — ask the owner of the IP address</small>}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
            <details>
              <summary>As zone-file lines</summary>
              <pre class="zone" tabIndex={0}>{plan.data.zone}</pre>
            </details>
          </>
        )}
      </section>

      <section aria-labelledby="dkim-h">
        <h2 id="dkim-h">DKIM</h2>
        <p>{hasDkim ? 'The domain has DKIM keys. Rotating makes a new key; it signs only once its record is visible on every authoritative server and the TTL has passed.' : 'No DKIM key yet: generate one (the private key stays sealed on the server).'}</p>
        <button type="button" disabled={dkim.busy || !plan.data} onClick={makeKeys}>{hasDkim ? 'Rotate DKIM keys' : 'Generate DKIM keys'}</button>
        <ErrorNote error={dkim.error} />
        {dkimResult && (
          <div role="status">
            {dkimResult.rotation
              ? <p>Rotation: step {dkimResult.rotation.step}, new selector {dkimResult.rotation.new_selector}{dkimResult.rotation.waiting ? `; waiting for ${dkimResult.rotation.waiting}` : ''}{dkimResult.rotation.wait_until ? ` until ${when(dkimResult.rotation.wait_until)}` : ''}.</p>
              : <p>Signing: {dkimResult.signing.status} — {dkimResult.signing.detail}</p>}
            <ul>{dkimResult.keys.map((k) => <li key={k.selector}>{k.selector}: {k.algorithm}{k.algorithm === 'rsa' ? ` ${k.bits} bits` : ''}, {k.state}</li>)}</ul>
          </div>
        )}
      </section>

      <Deliverability domain={domain} mailHost={mailHost} publicIp={publicIp} onError={onCheckError} />
      <CloudflareSync domain={domain} />
    </>
  );
}

/** The check as a job with progress; the last saved report with each check's status and what to fix. */
function Deliverability({ domain, mailHost, publicIp, onError }: { domain: string; mailHost: string; publicIp: string; onError: (e: ApiError | null) => void }) {
  const [version, reload] = useVersion();
  const last = useLoad(() => orNull(api<Report>('GET', `/domains/${enc(domain)}/deliverability`)), [version]);
  const [jobId, setJobId] = useState<string | null>(null);
  const start = useAction();
  const job = useJob<Report>(jobId, reload);
  const running = job !== null && (job.state === 'queued' || job.state === 'running');
  // An error naming the domain, the mail host or the IP shows at those inputs above; anything else here.
  useEffect(() => onError(start.error), [start.error]);
  const startErrors = formErrors(start.error, ['domain', 'mail_host', 'public_ip']);
  const r = last.data;
  return (
    <section aria-labelledby="deliv-h">
      <h2 id="deliv-h">Deliverability</h2>
      <button type="button" disabled={start.busy || running}
        onClick={() => void start.run(async () => setJobId((await api<{ job_id: string }>('POST', `/domains/${enc(domain)}/deliverability`, publicIp ? { mail_host: mailHost, public_ip: publicIp } : { mail_host: mailHost })).job_id))}>
        Check deliverability now
      </button>
      {start.error ? <ErrorNote errors={startErrors} /> : <ErrorNote error={last.error} />}
      <JobProgress job={job} label="Deliverability check progress" />
      {last.data === null && <p class="muted">No report yet.</p>}
      {r && (
        <>
          <p data-testid="deliverability-summary" class={r.ok ? 'ok' : 'error'}>
            Last report {when(r.checked_at)} (mail host {r.mail_host}): {r.counts.pass} passed, {r.counts.warn} recommended, {r.counts.fail} failed, {r.counts.unknown} could not be determined.
          </p>
          <div class="table-wrap" tabIndex={0} role="region" aria-label="Deliverability checks (scrolls sideways on small screens)">
            <table data-testid="deliverability-checks">
              <caption class="visually-hidden">Deliverability checks of {r.domain}</caption>
              <thead><tr><th scope="col">Check</th><th scope="col">Result</th><th scope="col">Detail</th><th scope="col">What to fix</th></tr></thead>
              <tbody>
                {r.checks.map((c) => (
                  <tr key={c.id} data-check={c.id}>
                    <th scope="row">{c.name}</th>
                    <td class={`status-${c.status}`}>{STATUS_TEXT[c.status]}</td>
                    <td class="break">{c.detail}</td>
                    <td>{c.status === 'pass' ? '—' : (c.fix ?? '—')}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
          {r.changes.length > 0 && <p>Changed since the report before: {r.changes.map((c) => `${c.name} ${c.from ?? 'new'} → ${c.to}`).join('; ')}</p>}
        </>
      )}
    </section>
  );
}

/** Cloudflare: the zone id and token (write-only: never shown, only replaced), then a dry run's diff before the run. */
function CloudflareSync({ domain }: { domain: string }) {
  const [version, reload] = useVersion();
  const sync = useLoad(() => orNull(api<Sync>('GET', `/domains/${enc(domain)}/dns-sync`)), [version]);
  const [zone, setZone] = useState('');
  const [token, setToken] = useState('');
  const [enabled, setEnabled] = useState(false);
  const [diff, setDiff] = useState<SyncResult | null>(null);
  const save = useAction();
  const run = useAction();
  useEffect(() => {
    setZone(sync.data?.zone_id ?? '');
    setEnabled(sync.data?.enabled ?? false);
  }, [sync.data]);
  const s = sync.data;
  const submit = (e: Event) => {
    e.preventDefault();
    void save.run(async () => {
      await api('PUT', `/domains/${enc(domain)}/dns-sync`, { zone_id: zone.trim(), api_token: token, enabled });
      setToken('');
      reload();
    });
  };
  const errors = formErrors(save.error, ['zone_id', 'api_token', 'enabled'], { primary: 'zone_id' });
  const go = (dryRun: boolean) => void run.run(async () => setDiff(await api<SyncResult>('POST', `/domains/${enc(domain)}/dns-sync/run`, { dry_run: dryRun })));
  return (
    <section aria-labelledby="cf-h">
      <h2 id="cf-h">Cloudflare sync</h2>
      <p class="muted">{s ? `Set up; token ${s.api_token_set ? 'stored (never shown)' : 'missing'}; automatic sync ${s.enabled ? 'on' : 'off'}; last sync ${when(s.last_sync_at)}.` : 'Not set up for this domain.'}</p>
      <form onSubmit={submit} aria-label="Cloudflare settings">
        <Field label="Zone ID" name="zone_id" value={zone} onInput={setZone} errors={errors} required />
        <Field label="API token" name="api_token" type="password" value={token} onInput={setToken} errors={errors} autocomplete="new-password" required hint={s?.api_token_set ? 'a token is stored; type it again or a new one to save changes' : 'a zone-limited token with DNS edit permission'} />
        <div class="field">
          <label class="choice"><input type="checkbox" name="enabled" checked={enabled} {...described('cf-enabled', errors.at('enabled'))} onChange={(e) => setEnabled((e.currentTarget as HTMLInputElement).checked)} /> Sync automatically after key changes</label>
          <FieldMessage id="cf-enabled" message={errors.at('enabled')} />
        </div>
        <button type="submit" disabled={save.busy}>Save Cloudflare settings</button>
      </form>
      {s && (
        <>
          <button type="button" class="secondary" disabled={run.busy} onClick={() => go(true)}>Preview the changes (dry run)</button>
          {diff?.dry_run && diff.changes.some((c) => c.action === 'create' || c.action === 'update' || c.action === 'delete') && (
            <button type="button" disabled={run.busy} onClick={() => go(false)}>Apply these changes</button>
          )}
          <ErrorNote error={run.error} />
          {diff && (
            <div role="status">
              <p>{diff.dry_run ? 'Dry run: nothing changed yet.' : `${diff.changed} record(s) changed${diff.verified ? ', read back and verified' : ''}.`}</p>
              <div class="table-wrap" tabIndex={0} role="region" aria-label="Sync changes (scrolls sideways on small screens)">
                <table>
                  <caption class="visually-hidden">Cloudflare changes</caption>
                  <thead><tr><th scope="col">Action</th><th scope="col">Name</th><th scope="col">Value</th><th scope="col">Why</th></tr></thead>
                  <tbody>{diff.changes.map((c) => <tr key={`${c.action} ${c.name} ${c.content}`}><td>{c.action}</td><td class="break">{c.name}</td><td class="break"><code>{c.content}</code></td><td>{c.reason}</td></tr>)}</tbody>
                </table>
              </div>
            </div>
          )}
        </>
      )}
    </section>
  );
}
