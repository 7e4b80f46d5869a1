import { useState } from 'preact/hooks';
import { formatUnit, UnitInput } from '../controls';
import { api } from '../api';
import { described, ErrorNote, FieldMessage, formErrors, Page, plural, useAction, useLoad, useFocusSetting } from '../ui';
import { LIMITS, LimitValueError, parseLimitValue } from '../../../src/shared/limit-keys.js';

/**
 * Settings → Limits: every key with its unit, default and range, from the same
 * list the API checks against; a value is checked here first (the same
 * parser), and the API's message for a key shows next to it.
 */
export function Limits() {
  const current = useLoad(() => api<Record<string, number>>('GET', '/admin/limits'), []);
  const [saved, setSaved] = useState<string[]>([]);
  if (!current.data) return <Page title="Settings → Limits">{current.error ? <ErrorNote error={current.error} /> : <p role="status">Loading…</p>}</Page>;
  return <Editor key={JSON.stringify(current.data)} data={current.data} reload={current.reload} saved={saved} setSaved={setSaved} />;
}

type EditorProps = { data: Record<string, number>; reload: () => void; saved: string[]; setSaved: (keys: string[]) => void };

function Editor({ data, reload, saved, setSaved }: EditorProps) {
  const current = { data, reload };
  const [draft, setDraft] = useState<Record<string, string>>(() => Object.fromEntries(Object.entries(data).map(([k, v]) => [k, String(v)])));
  const [local, setLocal] = useState<Record<string, string>>({});
  const save = useAction();
  useFocusSetting('limit-');

  const errors = formErrors(save.error, LIMITS.map((l) => l.key));
  const changed = Object.keys(draft).filter((k) => current.data && draft[k] !== String(current.data[k]));
  const submit = (e: Event) => {
    e.preventDefault();
    const problems: Record<string, string> = {};
    const patch: Record<string, string | number> = {};
    for (const key of changed) {
      const spec = LIMITS.find((l) => l.key === key);
      if (!spec) continue;
      try {
        patch[key] = parseLimitValue(spec, draft[key]!.trim());
      } catch (err) {
        problems[key] = err instanceof LimitValueError ? err.message : String(err);
      }
    }
    setLocal(problems);
    if (Object.keys(problems).length > 0 || changed.length === 0) return;
    void save.run(async () => {
      await api('PATCH', '/admin/limits', patch);
      setSaved(changed);
      current.reload();
    });
  };

  return (
    <Page title="Settings → Limits">
      <form onSubmit={submit} aria-label="Limits">
        <div class="table-wrap" tabIndex={0} role="region" aria-label="Table (scrolls sideways on small screens)">
          <table>
            <thead><tr><th>Limit</th><th>Value</th><th>Unit</th><th>Default</th><th>Range</th></tr></thead>
            <tbody>
              {LIMITS.map((l) => {
                const msg = local[l.key] ?? errors.at(l.key);
                const id = `limit-${l.key}`;
                return (
                  <tr key={l.key}>
                    <th scope="row"><label for={id}>{l.key}</label><br /><small>{l.description}</small></th>
                    <td>
                      {l.type === 'size' || l.type === 'duration' ? (
                        <UnitInput id={id} unit={l.unit} value={draft[l.key] ?? ''} aria={described(id, msg)} onChange={(v) => setDraft((d) => ({ ...d, [l.key]: v }))} />
                      ) : (
                        <input id={id} name={l.key} value={draft[l.key] ?? ''} inputMode="decimal" {...described(id, msg)}
                          onInput={(e) => setDraft({ ...draft, [l.key]: (e.currentTarget as HTMLInputElement).value })} />
                      )}
                      <FieldMessage id={id} message={msg} />
                      {saved.includes(l.key) && !msg && <small class="ok"> saved</small>}
                    </td>
                    <td>{l.unit}</td>
                    <td>{l.type === 'size' || l.type === 'duration' ? formatUnit(l.default, l.unit) : l.default}</td>
                    <td>{l.allowed ? l.allowed.join(', ') : l.type === 'size' || l.type === 'duration' ? `${formatUnit(l.min, l.unit)}–${formatUnit(l.max, l.unit)}` : `${l.min}–${l.max}`}</td>
                  </tr>
                );
              })}
            </tbody>
          </table>
        </div>
        <button type="submit" disabled={save.busy || changed.length === 0}>Save {changed.length ? plural(changed.length, 'change') : 'changes'}</button>
        <ErrorNote errors={errors} />
      </form>
    </Page>
  );
}
