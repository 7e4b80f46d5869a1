import { useState } from 'preact/hooks';
import { api } from '../api';
import { ErrorNote, Field, formErrors, Page, useAction, when, hashParam } from '../ui';
import { List, useVersion } from '../list';

type Domain = { id: number; name: string; active: boolean; accounts?: number; aliases?: number; created_at: string };

export function Domains() {
  const [version, reload] = useVersion();
  const [name, setName] = useState('');
  const create = useAction();
  const row = useAction();

  const add = (e: Event) => {
    e.preventDefault();
    void create.run(async () => {
      await api('POST', '/domains', { name: name.trim() });
      setName('');
      reload();
    });
  };
  const errors = formErrors(create.error, ['name'], { primary: 'name' });
  const act = (fn: () => Promise<unknown>) => void row.run(async () => (await fn(), reload()));

  return (
    <Page title="Domains">
      <form onSubmit={add} class="row" aria-label="Add a domain">
        <Field label="Domain name" name="name" value={name} onInput={setName} errors={errors} required hint="e.g. example.org" />
        <button type="submit" disabled={create.busy}>Add domain</button>
      </form>
      <ErrorNote error={row.error} />
      <List<Domain>
        label="Domains"
        path="/domains"
        version={version}
        filters={[{ name: 'q', label: 'Name contains', hint: 'part of a domain name' }]}
        initial={{ q: hashParam('q') }}
        rowKey={(d) => d.id}
        empty="No domains yet."
        columns={[
          { title: 'Name', cell: (d) => d.name },
          { title: 'Active', cell: (d) => (d.active ? 'yes' : 'no') },
          { title: 'Accounts', cell: (d) => d.accounts ?? '—' },
          { title: 'Aliases', cell: (d) => d.aliases ?? '—' },
          { title: 'Created', cell: (d) => when(d.created_at) },
          {
            title: 'Actions',
            cell: (d) => (
              <>
                <a href={`#/dns?domain=${encodeURIComponent(d.name)}`}>DNS <span class="visually-hidden">of {d.name}</span></a>{' '}
                <button type="button" class="secondary" onClick={() => act(() => api('PATCH', `/domains/${encodeURIComponent(d.name)}`, { active: !d.active }))}>
                  {d.active ? 'Deactivate' : 'Activate'} <span class="visually-hidden">{d.name}</span>
                </button>
                <button type="button" class="danger" onClick={() => confirm(`Delete ${d.name}?`) && act(() => api('DELETE', `/domains/${encodeURIComponent(d.name)}`))}>
                  Delete <span class="visually-hidden">{d.name}</span>
                </button>
              </>
            ),
          },
        ]}
      />
    </Page>
  );
}
