import { useState } from 'preact/hooks';
import { api, qs } from '../api';
import { ErrorNote, Field, PAGE_SIZE, Page, Pager, useAction, useLoad, when } from '../ui';

type Ban = { ip: string; jails: string[]; reason: string | null; banned_at: string | null; expires_at: string | null };
type PageOf<T> = { items: T[]; total: number };

export function Bans() {
  const [offset, setOffset] = useState(0);
  const list = useLoad(() => api<PageOf<Ban>>('GET', `/admin/bans${qs({ limit: PAGE_SIZE, offset })}`), [offset]);
  const [ip, setIp] = useState('');
  const [reason, setReason] = useState('');
  const create = useAction();
  const row = useAction();

  const ban = (e: Event) => {
    e.preventDefault();
    void create.run(async () => {
      await api('POST', '/admin/bans', { ip: ip.trim(), reason: reason.trim() });
      setIp('');
      setReason('');
      list.reload();
    });
  };

  return (
    <Page title="Bans">
      <form onSubmit={ban} aria-label="Ban an address">
        <h2>Ban an address</h2>
        <Field label="Address or network" name="ip" value={ip} onInput={setIp} error={create.error} primary required hint="IPv4/IPv6, or a network up to /24 (IPv4) or /64 (IPv6)" />
        <Field label="Reason" name="reason" value={reason} onInput={setReason} error={create.error} required />
        <button type="submit" disabled={create.busy}>Ban</button>
      </form>
      <ErrorNote error={list.error ?? row.error} />
      {list.data && (
        <>
          <div class="table-wrap" tabIndex={0} role="region" aria-label="Table (scrolls sideways on small screens)">
            <table>
              <thead><tr><th>Address</th><th>Jails</th><th>Reason</th><th>Banned</th><th>Expires</th><th>Actions</th></tr></thead>
              <tbody>
                {list.data.items.map((b) => (
                  <tr key={b.ip}>
                    <td>{b.ip}</td>
                    <td>{b.jails.join(', ')}</td>
                    <td>{b.reason ?? '—'}</td>
                    <td>{when(b.banned_at)}</td>
                    <td>{b.expires_at ? when(b.expires_at) : 'never / unknown'}</td>
                    <td>
                      <button type="button" class="secondary" onClick={() => void row.run(async () => (await api('DELETE', `/admin/bans/${encodeURIComponent(b.ip)}`), list.reload()))}>
                        Unban <span class="visually-hidden">{b.ip}</span>
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
