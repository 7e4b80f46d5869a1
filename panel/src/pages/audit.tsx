import { useState } from 'preact/hooks';
import { api, qs } from '../api';
import { ErrorNote, Field, PAGE_SIZE, Page, Pager, useLoad, when } from '../ui';

type Entry = { id: number; at: string; actor: string; source: string; action: string; target: string | null; summary: Record<string, unknown>; result: string };
type PageOf<T> = { items: T[]; total: number };

export function Audit() {
  const [form, setForm] = useState({ action: '', target: '' });
  const [filter, setFilter] = useState(form);
  const [offset, setOffset] = useState(0);
  const list = useLoad(() => api<PageOf<Entry>>('GET', `/admin/audit${qs({ ...filter, limit: PAGE_SIZE, offset })}`), [filter, offset]);
  return (
    <Page title="Audit log">
      <form class="row" aria-label="Filter the audit log" onSubmit={(e) => (e.preventDefault(), setOffset(0), setFilter(form))}>
        <Field label="Action" name="action" value={form.action} onInput={(v) => setForm({ ...form, action: v })} error={list.error} hint="exact, e.g. POST /domains" />
        <Field label="Target" name="target" value={form.target} onInput={(v) => setForm({ ...form, target: v })} error={list.error} />
        <button type="submit" class="secondary">Filter</button>
      </form>
      <ErrorNote error={list.error} fields={['action', 'target']} />
      {list.data && (
        <>
          <div class="table-wrap" tabIndex={0} role="region" aria-label="Table (scrolls sideways on small screens)">
            <table>
              <thead><tr><th>When</th><th>Who</th><th>From</th><th>Action</th><th>Target</th><th>Result</th><th>Summary</th></tr></thead>
              <tbody>
                {list.data.items.map((a) => (
                  <tr key={a.id}>
                    <td>{when(a.at)}</td>
                    <td>{a.actor}</td>
                    <td>{a.source}</td>
                    <td>{a.action}</td>
                    <td>{a.target ?? '—'}</td>
                    <td class={a.result === 'ok' ? 'ok' : 'error'}>{a.result}</td>
                    <td><small>{Object.entries(a.summary).map(([k, v]) => `${k}=${String(v)}`).join(' ')}</small></td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
          <Pager total={list.data.total} offset={offset} onOffset={setOffset} />
        </>
      )}
    </Page>
  );
}
