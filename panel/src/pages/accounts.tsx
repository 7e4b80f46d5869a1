import { useState } from 'preact/hooks';
import { api, qs } from '../api';
import { ErrorNote, Field, PAGE_SIZE, Page, Pager, ShownOnce, useAction, useLoad, when } from '../ui';

type Account = { id: number; address: string; display_name: string; quota_bytes: number; active: boolean; created_at: string };
type AppPassword = { id: string; name: string; created_at: string; expires_at: string | null; last_used_at: string | null; active: boolean };
type PageOf<T> = { items: T[]; total: number };

const MIB = 1024 * 1024;

export function Accounts() {
  const [domain, setDomain] = useState('');
  const [filter, setFilter] = useState('');
  const [offset, setOffset] = useState(0);
  const list = useLoad(() => api<PageOf<Account>>('GET', `/accounts${qs({ domain: filter, limit: PAGE_SIZE, offset })}`), [filter, offset]);
  const [form, setForm] = useState({ address: '', password: '', display_name: '', quota: '' });
  const set = (k: keyof typeof form) => (v: string) => setForm({ ...form, [k]: v });
  const create = useAction();
  const row = useAction();

  const add = (e: Event) => {
    e.preventDefault();
    void create.run(async () => {
      const body: Record<string, unknown> = { address: form.address.trim(), password: form.password };
      if (form.display_name) body.display_name = form.display_name;
      if (form.quota) body.quota_bytes = Math.round(Number(form.quota) * MIB);
      await api('POST', '/accounts', body);
      setForm({ address: '', password: '', display_name: '', quota: '' });
      list.reload();
    });
  };

  return (
    <Page title="Accounts">
      <form onSubmit={add} aria-label="Add an account">
        <h2>Add an account</h2>
        <Field label="Address" name="address" value={form.address} onInput={set('address')} error={create.error} primary required hint="user@example.org (its domain must exist)" />
        <Field label="Password" name="password" type="password" value={form.password} onInput={set('password')} error={create.error} autocomplete="new-password" required />
        <Field label="Display name" name="display_name" value={form.display_name} onInput={set('display_name')} error={create.error} />
        <Field label="Quota (MiB, empty for none)" name="quota_bytes" value={form.quota} onInput={set('quota')} error={create.error} inputMode="numeric" />
        <button type="submit" disabled={create.busy}>Add account</button>
      </form>
      <form class="row" onSubmit={(e) => (e.preventDefault(), setOffset(0), setFilter(domain.trim()))} aria-label="Filter accounts">
        <Field label="Domain" name="domain" value={domain} onInput={setDomain} error={list.error} primary />
        <button type="submit" class="secondary">Filter</button>
      </form>
      <ErrorNote error={row.error} />
      {list.data && (
        <>
          <div class="table-wrap" tabIndex={0} role="region" aria-label="Table (scrolls sideways on small screens)">
            <table>
              <thead><tr><th>Address</th><th>Name</th><th>Quota</th><th>Active</th><th>Created</th><th>Actions</th></tr></thead>
              <tbody>
                {list.data.items.map((a) => (
                  <tr key={a.id}>
                    <td>{a.address}</td>
                    <td>{a.display_name}</td>
                    <td>{a.quota_bytes ? `${Math.round(a.quota_bytes / MIB)} MiB` : 'none'}</td>
                    <td>{a.active ? 'yes' : 'no'}</td>
                    <td>{when(a.created_at)}</td>
                    <td>
                      <a href={`#/app-passwords?account=${encodeURIComponent(a.address)}`}>App passwords <span class="visually-hidden">of {a.address}</span></a>{' '}
                      <button type="button" class="danger" onClick={() => confirm(`Delete ${a.address} and its mail settings?`) && void row.run(async () => (await api('DELETE', `/accounts/${encodeURIComponent(a.address)}`), list.reload()))}>
                        Delete <span class="visually-hidden">{a.address}</span>
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

const accountFromHash = (): string => new URLSearchParams(location.hash.split('?')[1] ?? '').get('account') ?? '';

export function AppPasswords() {
  const [account, setAccount] = useState(accountFromHash());
  const [shown, setShown] = useState(accountFromHash());
  const list = useLoad(() => (shown ? api<AppPassword[] | PageOf<AppPassword>>('GET', `/accounts/${encodeURIComponent(shown)}/app-passwords`) : Promise.resolve([])), [shown]);
  const items = Array.isArray(list.data) ? list.data : (list.data?.items ?? []);
  const [name, setName] = useState('');
  const [created, setCreated] = useState<{ name: string; password: string } | null>(null);
  const create = useAction();
  const row = useAction();

  const add = (e: Event) => {
    e.preventDefault();
    void create.run(async () => {
      const made = await api<{ name: string; password: string }>('POST', `/accounts/${encodeURIComponent(shown)}/app-passwords`, { name: name.trim() });
      setCreated({ name: made.name, password: made.password });
      setName('');
      list.reload();
    });
  };

  return (
    <Page title="App passwords">
      <form class="row" onSubmit={(e) => (e.preventDefault(), setCreated(null), setShown(account.trim()))} aria-label="Choose an account">
        <Field label="Account address" name="account" value={account} onInput={setAccount} error={list.error} primary required />
        <button type="submit" class="secondary">Show</button>
      </form>
      {shown && !list.error && (
        <>
          <form class="row" onSubmit={add} aria-label="New app password">
            <Field label="Name of the new app password" name="name" value={name} onInput={setName} error={create.error} primary required hint="e.g. phone, laptop" />
            <button type="submit" disabled={create.busy}>Create app password</button>
          </form>
          {created && <ShownOnce label={`App password "${created.name}"`} value={created.password} />}
          <ErrorNote error={row.error} />
          <div class="table-wrap" tabIndex={0} role="region" aria-label="Table (scrolls sideways on small screens)">
            <table>
              <caption class="muted">App passwords of {shown}</caption>
              <thead><tr><th>Name</th><th>Created</th><th>Expires</th><th>Last used</th><th>Actions</th></tr></thead>
              <tbody>
                {items.map((p) => (
                  <tr key={p.id}>
                    <td>{p.name}</td>
                    <td>{when(p.created_at)}</td>
                    <td>{when(p.expires_at)}</td>
                    <td>{when(p.last_used_at)}</td>
                    <td>
                      <button type="button" class="danger" onClick={() => void row.run(async () => (await api('DELETE', `/accounts/${encodeURIComponent(shown)}/app-passwords/${p.id}`), list.reload()))}>
                        Revoke <span class="visually-hidden">{p.name}</span>
                      </button>
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        </>
      )}
    </Page>
  );
}
