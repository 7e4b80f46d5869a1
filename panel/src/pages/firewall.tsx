import { useState } from 'preact/hooks';
import { ApiError, api } from '../api';
import { ErrorNote, Page, useAction, useLoad, when } from '../ui';

type Rule = { ports: string; protocol: 'tcp' | 'udp'; source: string; enabled: 'yes' | 'no' };
type Firewall = { 'firewall-enabled': 'yes' | 'no'; 'firewall-rules-json': Rule[]; confirm_by?: string };

/** The message the API gives for row i's field, from paths like firewall-rules-json[2].ports. */
const rowError = (err: ApiError | null, i: number, field: keyof Rule): string | undefined =>
  err?.errors.find((e) => e.path.replace(/^body\./, '').replace(/\.(\d+)\./, '[$1].') === `firewall-rules-json[${i}].${field}`)?.message;

export function Firewall() {
  const current = useLoad(() => api<Firewall>('GET', '/admin/firewall'), []);
  // The editor opens on the stored rules, never on an empty table that would replace them.
  if (!current.data) return <Page title="Firewall">{current.error ? <ErrorNote error={current.error} /> : <p role="status">Loading…</p>}</Page>;
  return <Editor key={JSON.stringify(current.data)} data={current.data} reload={current.reload} />;
}

function Editor({ data, reload }: { data: Firewall; reload: () => void }) {
  const current = { data, reload };
  const [enabled, setEnabled] = useState<'yes' | 'no'>(data['firewall-enabled']);
  const [rules, setRules] = useState<Rule[]>(data['firewall-rules-json']);
  const [lockout, setLockout] = useState<string | null>(null);
  const save = useAction();

  const edit = (i: number, field: keyof Rule, value: string) => setRules(rules.map((r, j) => (j === i ? { ...r, [field]: value } : r)));
  const apply = (force: boolean) =>
    void save.run(async () => {
      try {
        await api('PUT', `/admin/firewall${force ? '?force=true' : ''}`, { 'firewall-enabled': enabled, 'firewall-rules-json': rules });
        setLockout(null);
        current.reload();
      } catch (e) {
        // 409: the rules would cut this administrator off from SSH or the API.
        if (e instanceof ApiError && e.status === 409) setLockout(e.detail);
        else throw e;
      }
    });

  const cell = (i: number, field: 'ports' | 'source', label: string) => {
    const msg = rowError(save.error, i, field);
    return (
      <td>
        <input aria-label={`${label}, row ${i + 1}`} value={rules[i]![field]} aria-invalid={msg ? 'true' : undefined} onInput={(e) => edit(i, field, (e.currentTarget as HTMLInputElement).value)} />
        {msg && <small class="error" role="alert">{msg}</small>}
      </td>
    );
  };

  return (
    <Page title="Firewall">
      {current.data?.confirm_by && (
        <p class="warn" role="status">
          A forced change reverts at {when(current.data.confirm_by)} unless you keep it.{' '}
          <button type="button" onClick={() => void save.run(async () => (await api('POST', '/admin/firewall/confirm'), current.reload()))}>Keep this ruleset</button>
        </p>
      )}
      <div class="field">
        <label for="fw-enabled">Firewall enabled</label>
        <select id="fw-enabled" value={enabled} onChange={(e) => setEnabled((e.currentTarget as HTMLSelectElement).value as 'yes' | 'no')}>
          <option value="yes">yes</option>
          <option value="no">no</option>
        </select>
      </div>
      <div class="table-wrap" tabIndex={0} role="region" aria-label="Table (scrolls sideways on small screens)">
        <table>
          <caption class="muted">Allowed incoming traffic</caption>
          <thead><tr><th>Port</th><th>Protocol</th><th>Source</th><th>Enabled</th><th>Actions</th></tr></thead>
          <tbody>
            {rules.map((r, i) => (
              <tr key={i}>
                {cell(i, 'ports', 'Port')}
                <td>
                  <select aria-label={`Protocol, row ${i + 1}`} value={r.protocol} onChange={(e) => edit(i, 'protocol', (e.currentTarget as HTMLSelectElement).value)}>
                    <option value="tcp">tcp</option>
                    <option value="udp">udp</option>
                  </select>
                </td>
                {cell(i, 'source', 'Source')}
                <td>
                  <select aria-label={`Enabled, row ${i + 1}`} value={r.enabled} onChange={(e) => edit(i, 'enabled', (e.currentTarget as HTMLSelectElement).value)}>
                    <option value="yes">yes</option>
                    <option value="no">no</option>
                  </select>
                </td>
                <td><button type="button" class="secondary" onClick={() => setRules(rules.filter((_, j) => j !== i))}>Remove <span class="visually-hidden">row {i + 1}</span></button></td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      <button type="button" class="secondary" onClick={() => setRules([...rules, { ports: '', protocol: 'tcp', source: '', enabled: 'yes' }])}>Add row</button>
      <p class="muted">Ports: numbers, ranges (8000-8100) or groups (mail, web, ssh). Source: an address or network, empty for any.</p>
      <button type="button" onClick={() => apply(false)} disabled={save.busy}>Save and apply</button>
      {lockout && (
        <div class="warn" role="alert">
          <p><strong>Lockout guard:</strong> {lockout}</p>
          <p>Applying anyway reverts by itself unless you confirm it in time.</p>
          <button type="button" class="danger" onClick={() => apply(true)}>Apply anyway</button>
        </div>
      )}
      <ErrorNote error={save.error && save.error.errors.length === 0 ? save.error : null} />
    </Page>
  );
}
