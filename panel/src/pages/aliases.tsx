import { useState } from 'preact/hooks';
import { api, qs } from '../api';
import { ErrorNote, Field, PAGE_SIZE, Page, Pager, useAction, useLoad } from '../ui';

type Alias = { id: number; source: string; destinations: string[]; active: boolean };
type PageOf<T> = { items: T[]; total: number };

export function Aliases() {
  const [domain, setDomain] = useState('');
  const [filter, setFilter] = useState('');
  const [offset, setOffset] = useState(0);
  const list = useLoad(() => api<PageOf<Alias>>('GET', `/aliases${qs({ domain: filter, limit: PAGE_SIZE, offset })}`), [filter, offset]);
  const [source, setSource] = useState('');
  const [destinations, setDestinations] = useState('');
  const create = useAction();
  const row = useAction();

  const add = (e: Event) => {
    e.preventDefault();
    void create.run(async () => {
      const to = destinations.split(/[\s,]+/).filter(Boolean);
      await api('POST', '/aliases', { source: source.trim(), destinations: to });
      setSource('');
      setDestinations('');
      list.reload();
    });
  };

  return (
    <Page title="Aliases">
      <form onSubmit={add} aria-label="Add an alias">
        <h2>Add an alias</h2>
        <Field label="Source" name="source" value={source} onInput={setSource} error={create.error} primary required hint="an address, or @example.org for a catch-all" />
        <Field label="Destinations" name="destinations" value={destinations} onInput={setDestinations} error={create.error} required hint="addresses separated by commas or spaces" />
        <button type="submit" disabled={create.busy}>Add alias</button>
      </form>
      <form class="row" onSubmit={(e) => (e.preventDefault(), setOffset(0), setFilter(domain.trim()))} aria-label="Filter aliases">
        <Field label="Domain" name="domain" value={domain} onInput={setDomain} error={list.error} primary />
        <button type="submit" class="secondary">Filter</button>
      </form>
      <ErrorNote error={row.error} />
      {list.data && (
        <>
          <div class="table-wrap" tabIndex={0} role="region" aria-label="Table (scrolls sideways on small screens)">
            <table>
              <thead><tr><th>Source</th><th>Destinations</th><th>Active</th><th>Actions</th></tr></thead>
              <tbody>
                {list.data.items.map((a) => (
                  <tr key={a.id}>
                    <td>{a.source}</td>
                    <td>{a.destinations.join(', ')}</td>
                    <td>{a.active ? 'yes' : 'no'}</td>
                    <td>
                      <button type="button" class="danger" onClick={() => void row.run(async () => (await api('DELETE', `/aliases/${encodeURIComponent(a.source)}`), list.reload()))}>
                        Delete <span class="visually-hidden">{a.source}</span>
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
