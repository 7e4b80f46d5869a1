import { useState } from 'preact/hooks';
import { api, qs } from '../api';
import { ErrorNote, Field, PAGE_SIZE, Page, Pager, useAction, useLoad, when } from '../ui';

type Domain = { id: number; name: string; active: boolean; accounts?: number; aliases?: number; created_at: string };
type PageOf<T> = { items: T[]; total: number; limit: number; offset: number };

export function Domains() {
  const [offset, setOffset] = useState(0);
  const list = useLoad(() => api<PageOf<Domain>>('GET', `/domains${qs({ limit: PAGE_SIZE, offset })}`), [offset]);
  const [name, setName] = useState('');
  const create = useAction();
  const row = useAction();

  const add = (e: Event) => {
    e.preventDefault();
    void create.run(async () => {
      await api('POST', '/domains', { name: name.trim() });
      setName('');
      list.reload();
    });
  };
  const act = (fn: () => Promise<unknown>) => void row.run(async () => (await fn(), list.reload()));

  return (
    <Page title="Domains">
      <form onSubmit={add} class="row" aria-label="Add a domain">
        <Field label="Domain name" name="name" value={name} onInput={setName} error={create.error} primary required hint="e.g. example.org" />
        <button type="submit" disabled={create.busy}>Add domain</button>
      </form>
      <ErrorNote error={list.error ?? row.error} />
      {list.data && (
        <>
          <div class="table-wrap" tabIndex={0} role="region" aria-label="Table (scrolls sideways on small screens)">
            <table>
              <thead><tr><th>Name</th><th>Active</th><th>Accounts</th><th>Aliases</th><th>Created</th><th>Actions</th></tr></thead>
              <tbody>
                {list.data.items.map((d) => (
                  <tr key={d.id}>
                    <td>{d.name}</td>
                    <td>{d.active ? 'yes' : 'no'}</td>
                    <td>{d.accounts ?? '—'}</td>
                    <td>{d.aliases ?? '—'}</td>
                    <td>{when(d.created_at)}</td>
                    <td>
                      <button type="button" class="secondary" onClick={() => act(() => api('PATCH', `/domains/${encodeURIComponent(d.name)}`, { active: !d.active }))}>
                        {d.active ? 'Deactivate' : 'Activate'} <span class="visually-hidden">{d.name}</span>
                      </button>
                      <button type="button" class="danger" onClick={() => confirm(`Delete ${d.name}?`) && act(() => api('DELETE', `/domains/${encodeURIComponent(d.name)}`))}>
                        Delete <span class="visually-hidden">{d.name}</span>
                      </button>
                    </td>
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
