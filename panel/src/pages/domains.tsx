import { useState } from 'preact/hooks';
import { api } from '../api';
import { ErrorNote, Field, formErrors, Page, useAction, when, hashParam } from '../ui';
import { List, useVersion } from '../list';

type Domain = { id: number; name: string; active: boolean; accounts?: number; aliases?: number; created_at: string; dkim?: { keys: { selector: string; record_name: string; record_value: string }[] } };

export function Domains() {
  const [version, reload] = useVersion();
  const [name, setName] = useState('');
  const [dkim, setDkim] = useState(true);
  const [added, setAdded] = useState<Domain | null>(null);
  const create = useAction();
  const row = useAction();

  const add = (e: Event) => {
    e.preventDefault();
    void create.run(async () => {
      setAdded(null);
      setAdded(await api<Domain>('POST', '/domains', dkim ? { name: name.trim(), generate_dkim: true } : { name: name.trim() }));
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
        <label class="switch inline-switch">
          <input type="checkbox" role="switch" checked={dkim} onChange={(e) => setDkim((e.currentTarget as HTMLInputElement).checked)} />
          <span class="track" aria-hidden="true" /> Make its DKIM keys <span class="switch-state">{dkim ? 'on' : 'off'}</span>
        </label>
        <button type="submit" disabled={create.busy}>{create.busy ? 'Adding…' : 'Add domain'}</button>
      </form>
      {added && (
        <div class="once" role="status" data-testid="domain-added">
          <p><strong><span aria-hidden="true">✓ </span>{added.name} added.</strong> {added.dkim ? 'Publish these DKIM records in its zone; Rspamd signs its mail with them now:' : 'No DKIM keys yet.'}</p>
          {added.dkim && (
            <div class="table-wrap" tabIndex={0} role="region" aria-label="DKIM records to publish (scrolls sideways on small screens)">
              <table>
                <thead><tr><th scope="col">Name (TXT)</th><th scope="col">Value</th></tr></thead>
                <tbody>{added.dkim.keys.map((k) => <tr key={k.selector}><td class="break">{k.record_name}</td><td><code class="break">{k.record_value}</code></td></tr>)}</tbody>
              </table>
            </div>
          )}
          <p><a href={`#/dns?domain=${encodeURIComponent(added.name)}`}>Every record to publish for {added.name} (MX, SPF, DMARC …) and a deliverability check</a></p>
        </div>
      )}
      <ErrorNote error={row.error} />
      <List<Domain>
        label="Domains"
        path="/domains"
        version={version}
        filters={[{ name: 'q', label: 'Name contains', hint: 'part of a domain name' }]}
        initial={{ q: hashParam('q') }}
        rowKey={(d) => d.id}
        defaultSort="name"
        empty="No domains yet: add the first one above (its DKIM keys are made with it)."
        columns={[
          { title: 'Name', cell: (d) => d.name, sort: 'name' },
          { title: 'Active', cell: (d) => (d.active ? 'yes' : 'no'), sort: 'active' },
          { title: 'Accounts', cell: (d) => d.accounts ?? '—', sort: 'accounts' },
          { title: 'Aliases', cell: (d) => d.aliases ?? '—', sort: 'aliases' },
          { title: 'Created', cell: (d) => when(d.created_at), sort: 'created_at' },
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
