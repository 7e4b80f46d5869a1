import { useState } from 'preact/hooks';
import { ApiError, api } from '../api';
import { described, ErrorNote, FieldMessage, formErrors, Page, useAction, useLoad, when } from '../ui';

type Rule = { ports: string; protocol: 'tcp' | 'udp'; source: string; enabled: 'yes' | 'no' };
type Firewall = { 'firewall-enabled': 'yes' | 'no'; 'firewall-rules-json': Rule[]; confirm_by?: string };

/** A row's cell as a form field: the API names it firewall-rules-json.2.ports (or [2].ports). */
const cellName = (i: number, field: keyof Rule): string => `firewall-rules-json.${i}.${field}`;
const FIELDS = (rules: Rule[]): string[] => ['firewall-enabled', ...rules.flatMap((_, i) => (['ports', 'protocol', 'source', 'enabled'] as const).map((f) => cellName(i, f)))];
const normal = (path: string): string => path.replace(/\[(\d+)\]/g, '.$1');

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

  // The lockout guard's 409 has its own box; anything else at the cell, the switch or (naming no field) below the table.
  const refusal = save.error && save.error.status !== 409 ? new ApiError(save.error.status, save.error.detail, save.error.errors.map((e) => ({ ...e, path: normal(e.path) }))) : null;
  const errors = formErrors(refusal, FIELDS(rules));
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
    const msg = errors.at(cellName(i, field));
    const id = `fw-${i}-${field}`;
    return (
      <td>
        <input id={id} aria-label={`${label}, row ${i + 1}`} value={rules[i]![field]} {...described(id, msg)} onInput={(e) => edit(i, field, (e.currentTarget as HTMLInputElement).value)} />
        <FieldMessage id={id} message={msg} />
      </td>
    );
  };
  const choice = (i: number, field: 'protocol' | 'enabled', label: string, values: string[]) => {
    const msg = errors.at(cellName(i, field));
    const id = `fw-${i}-${field}`;
    return (
      <td>
        <select id={id} aria-label={`${label}, row ${i + 1}`} value={rules[i]![field]} {...described(id, msg)} onChange={(e) => edit(i, field, (e.currentTarget as HTMLSelectElement).value)}>
          {values.map((v) => <option key={v} value={v}>{v}</option>)}
        </select>
        <FieldMessage id={id} message={msg} />
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
        <select id="fw-enabled" value={enabled} {...described('fw-enabled', errors.at('firewall-enabled'))} onChange={(e) => setEnabled((e.currentTarget as HTMLSelectElement).value as 'yes' | 'no')}>
          <option value="yes">yes</option>
          <option value="no">no</option>
        </select>
        <FieldMessage id="fw-enabled" message={errors.at('firewall-enabled')} />
      </div>
      <div class="table-wrap" tabIndex={0} role="region" aria-label="Table (scrolls sideways on small screens)">
        <table>
          <caption class="muted">Allowed incoming traffic</caption>
          <thead><tr><th>Port</th><th>Protocol</th><th>Source</th><th>Enabled</th><th>Actions</th></tr></thead>
          <tbody>
            {rules.map((r, i) => (
              <tr key={i}>
                {cell(i, 'ports', 'Port')}
                {choice(i, 'protocol', 'Protocol', ['tcp', 'udp'])}
                {cell(i, 'source', 'Source')}
                {choice(i, 'enabled', 'Enabled', ['yes', 'no'])}
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
      <ErrorNote errors={errors} />
    </Page>
  );
}
