import { useState } from 'preact/hooks';
import { api } from '../api';
import { ErrorNote, Field, formErrors, hashParam, Page, useAction, when } from '../ui';
import { List, useVersion } from '../list';

type Alias = { id: number; source: string; domain: string; destinations: string[]; active: boolean; created_at: string };

export function Aliases() {
  const [version, reload] = useVersion();
  const [source, setSource] = useState('');
  const [destinations, setDestinations] = useState('');
  const create = useAction();
  const row = useAction();

  const errors = formErrors(create.error, ['source', 'destinations'], { primary: 'source' });
  const add = (e: Event) => {
    e.preventDefault();
    void create.run(async () => {
      const to = destinations.split(/[\s,]+/).filter(Boolean);
      await api('POST', '/aliases', { source: source.trim(), destinations: to });
      setSource('');
      setDestinations('');
      reload();
    });
  };

  return (
    <Page title="Aliases">
      <form onSubmit={add} aria-label="Add an alias">
        <h2>Add an alias</h2>
        <Field label="Source" name="source" value={source} onInput={setSource} errors={errors} required hint="an address, or @example.org for a catch-all" />
        <Field label="Destinations" name="destinations" value={destinations} onInput={setDestinations} errors={errors} required hint="addresses separated by commas or spaces" />
        <button type="submit" disabled={create.busy}>Add alias</button>
      </form>
      <ErrorNote error={row.error} />
      <List<Alias>
        label="Aliases"
        path="/aliases"
        version={version}
        filters={[{ name: 'q', label: 'Address contains', hint: 'part of the source or of a destination' }, { name: 'domain', label: 'Domain' }]}
        initial={{ q: hashParam('q'), domain: hashParam('domain') }}
        rowKey={(a) => a.id}
        defaultSort="source"
        empty={(filtered) => (filtered ? 'No alias matches this filter: clear it to see every alias.' : 'No aliases yet: add one above to forward an address (or @domain) to mailboxes.')}
        columns={[
          { title: 'Source', cell: (a) => a.source, sort: 'source' },
          { title: 'Domain', cell: (a) => a.domain, sort: 'domain' },
          { title: 'Destinations', cell: (a) => a.destinations.join(', ') },
          { title: 'Active', cell: (a) => (a.active ? 'yes' : 'no'), sort: 'active' },
          { title: 'Created', cell: (a) => when(a.created_at), sort: 'created_at' },
          {
            title: 'Actions',
            cell: (a) => (
              <button type="button" class="danger" onClick={() => void row.run(async () => (await api('DELETE', `/aliases/${encodeURIComponent(a.source)}`), reload()))}>
                Delete <span class="visually-hidden">{a.source}</span>
              </button>
            ),
          },
        ]}
      />
    </Page>
  );
}
