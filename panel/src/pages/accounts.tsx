import { useState } from 'preact/hooks';
import { api } from '../api';
import { bytes, ErrorNote, Field, firstOf, formErrors, Page, ShownOnce, useAction, when, hashParam } from '../ui';
import type { ApiError } from '../api';
import { List, useVersion } from '../list';

type Account = { id: number; address: string; display_name: string; quota_bytes: number; active: boolean; created_at: string };
type AppPassword = { id: string; name: string; created_at: string; expires_at: string | null; last_used_at: string | null; active: boolean };

const MIB = 1024 * 1024;

export function Accounts() {
  const [version, reload] = useVersion();
  const [form, setForm] = useState({ address: '', password: '', display_name: '', quota: '' });
  const set = (k: keyof typeof form) => (v: string) => setForm({ ...form, [k]: v });
  const create = useAction();
  const row = useAction();
  const [added, setAdded] = useState<string | null>(null);

  const errors = formErrors(create.error, ['address', 'password', 'display_name', 'quota_bytes'], { primary: 'address' });
  const add = (e: Event) => {
    e.preventDefault();
    void create.run(async () => {
      const body: Record<string, unknown> = { address: form.address.trim(), password: form.password };
      if (form.display_name) body.display_name = form.display_name;
      if (form.quota) body.quota_bytes = Math.round(Number(form.quota) * MIB);
      setAdded(null);
      const made = await api<Account>('POST', '/accounts', body);
      setAdded(made.address);
      setForm({ address: '', password: '', display_name: '', quota: '' });
      reload();
    });
  };

  return (
    <Page title="Accounts">
      <form onSubmit={add} aria-label="Add an account">
        <h2>Add an account</h2>
        <Field label="Address" name="address" value={form.address} onInput={set('address')} errors={errors} required hint="user@example.org (its domain must exist)" />
        <Field label="Password" name="password" type="password" value={form.password} onInput={set('password')} errors={errors} autocomplete="new-password" required />
        <Field label="Display name" name="display_name" value={form.display_name} onInput={set('display_name')} errors={errors} />
        <Field label="Quota (MiB, empty for none)" name="quota_bytes" value={form.quota} onInput={set('quota')} errors={errors} inputMode="numeric" />
        <button type="submit" disabled={create.busy}>Add account</button>
      </form>
      {added && <QuickAppPassword key={added} account={added} />}
      <ErrorNote error={row.error} />
      <List<Account>
        label="Accounts"
        path="/accounts"
        version={version}
        filters={[{ name: 'q', label: 'Address contains', hint: 'part of an address' }, { name: 'domain', label: 'Domain' }]}
        initial={{ q: hashParam('q'), domain: hashParam('domain') }}
        rowKey={(a) => a.id}
        defaultSort="address"
        empty="No accounts here: add one above (its domain must exist first)."
        columns={[
          { title: 'Address', cell: (a) => a.address, sort: 'address' },
          { title: 'Name', cell: (a) => a.display_name, sort: 'display_name' },
          { title: 'Quota', cell: (a) => (a.quota_bytes ? bytes(a.quota_bytes) : 'none'), sort: 'quota_bytes' },
          { title: 'Active', cell: (a) => (a.active ? 'yes' : 'no'), sort: 'active' },
          { title: 'Created', cell: (a) => when(a.created_at), sort: 'created_at' },
          {
            title: 'Actions',
            cell: (a) => (
              <>
                <a href={`#/app-passwords?account=${encodeURIComponent(a.address)}`}>App passwords <span class="visually-hidden">of {a.address}</span></a>{' '}
                <button type="button" class="danger" onClick={() => confirm(`Delete ${a.address} and its mail settings?`) && void row.run(async () => (await api('DELETE', `/accounts/${encodeURIComponent(a.address)}`), reload()))}>
                  Delete <span class="visually-hidden">{a.address}</span>
                </button>
              </>
            ),
          },
        ]}
      />
    </Page>
  );
}

const accountFromHash = (): string => new URLSearchParams(location.hash.split('?')[1] ?? '').get('account') ?? '';

export function AppPasswords() {
  const [version, reload] = useVersion();
  const [account, setAccount] = useState(accountFromHash());
  const [shown, setShown] = useState(accountFromHash());
  const [name, setName] = useState('');
  const [created, setCreated] = useState<{ name: string; password: string } | null>(null);
  // The list's error (a wrong account: 404, or a malformed one: 422 on the path's id) shows at the account field.
  const [listError, setListError] = useState<ApiError | null>(null);
  const create = useAction();
  const row = useAction();
  const base = `/accounts/${encodeURIComponent(shown)}/app-passwords`;
  const aboutAccount = { alias: { id: 'account' } };
  const listErrors = formErrors(listError, ['account'], { ...aboutAccount, primary: 'account' });
  // A create refused for its account (gone meanwhile: 404) says so at the account; anything else at the name.
  const createErrors = formErrors(create.error, ['name'], { ...aboutAccount, primary: (e) => (e.status === 404 ? 'account' : 'name') });

  const add = (e: Event) => {
    e.preventDefault();
    void create.run(async () => {
      const made = await api<{ name: string; password: string }>('POST', base, { name: name.trim() });
      setCreated({ name: made.name, password: made.password });
      setName('');
      reload();
    });
  };
  const show = (e: Event) => {
    e.preventDefault();
    setCreated(null);
    create.clear();
    setListError(null);
    setShown(account.trim());
  };

  return (
    <Page title="App passwords">
      <form class="row" onSubmit={show} aria-label="Choose an account">
        <Field label="Account address" name="account" value={account} onInput={setAccount} errors={firstOf(listErrors, createErrors)} required />
        <button type="submit" class="secondary">Show</button>
      </form>
      {shown && (
        <>
          {!listError && (
            <form class="row" onSubmit={add} aria-label="New app password">
              <Field label="Name of the new app password" name="name" value={name} onInput={setName} errors={createErrors} required hint="e.g. phone, laptop" />
              <button type="submit" disabled={create.busy}>Create app password</button>
            </form>
          )}
          {created && <ShownOnce label={`App password "${created.name}"`} value={created.password} />}
          <ErrorNote error={row.error} />
          <List<AppPassword>
            label={`App passwords of ${shown}`}
            path={base}
            unpaged
            version={version}
            onError={setListError}
            rowKey={(p) => p.id}
            empty="No app passwords."
            columns={[
              { title: 'Name', cell: (p) => p.name },
              { title: 'Created', cell: (p) => when(p.created_at) },
              { title: 'Expires', cell: (p) => when(p.expires_at) },
              { title: 'Last used', cell: (p) => when(p.last_used_at) },
              {
                title: 'Actions',
                cell: (p) => (
                  <button type="button" class="danger" onClick={() => void row.run(async () => (await api('DELETE', `${base}/${p.id}`), reload()))}>
                    Revoke <span class="visually-hidden">{p.name}</span>
                  </button>
                ),
              },
            ]}
          />
        </>
      )}
    </Page>
  );
}

/** Right after an account is made: its first app password, shown once with Copy, without going to another page. */
function QuickAppPassword({ account }: { account: string }) {
  const [name, setName] = useState('');
  const [created, setCreated] = useState<{ name: string; password: string } | null>(null);
  const create = useAction();
  const errors = formErrors(create.error, ['name'], { primary: 'name' });
  const add = (e: Event) => {
    e.preventDefault();
    void create.run(async () => {
      const made = await api<{ name: string; password: string }>('POST', `/accounts/${encodeURIComponent(account)}/app-passwords`, { name: name.trim() });
      setCreated({ name: made.name, password: made.password });
      setName('');
    });
  };
  return (
    <section class="card" aria-labelledby="quick-app-h" data-testid="account-added">
      <h2 id="quick-app-h"><span aria-hidden="true">✓ </span>{account} added</h2>
      <form class="row" onSubmit={add} aria-label={`App password for ${account}`}>
        <Field label="Name of the new app password" name="name" value={name} onInput={setName} errors={errors} required hint="e.g. phone, laptop: one for each mail client" />
        <button type="submit" disabled={create.busy}>Create app password</button>
      </form>
      {created && <ShownOnce label={`App password "${created.name}"`} value={created.password} />}
      <p><a href={`#/app-passwords?account=${encodeURIComponent(account)}`}>All app passwords of {account}</a></p>
    </section>
  );
}
