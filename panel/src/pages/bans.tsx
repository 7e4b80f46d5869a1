import { useState } from 'preact/hooks';
import { api } from '../api';
import { ErrorNote, Field, formErrors, Page, useAction, when } from '../ui';
import { List, useVersion } from '../list';

type Ban = { ip: string; jails: string[]; reason: string | null; banned_at: string | null; expires_at: string | null };

export function Bans() {
  const [version, reload] = useVersion();
  const [ip, setIp] = useState('');
  const DEFAULT_REASON = 'banned by hand in the panel';
  const [reason, setReason] = useState(DEFAULT_REASON);
  const create = useAction();
  const row = useAction();

  const errors = formErrors(create.error, ['ip', 'reason'], { primary: 'ip' });
  const ban = (e: Event) => {
    e.preventDefault();
    void create.run(async () => {
      await api('POST', '/admin/bans', { ip: ip.trim(), reason: reason.trim() });
      setIp('');
      setReason(DEFAULT_REASON);
      reload();
    });
  };

  return (
    <Page title="Bans">
      <form onSubmit={ban} aria-label="Ban an address">
        <h2>Ban an address</h2>
        <Field label="Address or network" name="ip" value={ip} onInput={setIp} errors={errors} required hint="IPv4/IPv6, or a network up to /24 (IPv4) or /64 (IPv6)" />
        <Field label="Reason" name="reason" value={reason} onInput={setReason} errors={errors} required />
        <button type="submit" disabled={create.busy}>Ban</button>
      </form>
      <ErrorNote error={row.error} />
      <List<Ban>
        label="Bans"
        path="/admin/bans"
        version={version}
        filters={[{ name: 'q', label: 'Address contains', hint: 'part of an address or network' }, { name: 'jail', label: 'Jail', hint: 'e.g. sshd' }]}
        rowKey={(b) => b.ip}
        defaultSort="ip"
        empty={(filtered) => (filtered ? 'No ban matches this filter: clear it to see every ban.' : "Nothing is banned: fail2ban's bans and the ones made above show here.")}
        columns={[
          { title: 'Address', cell: (b) => b.ip, sort: 'ip' },
          { title: 'Jails', cell: (b) => b.jails.join(', ') },
          { title: 'Reason', cell: (b) => b.reason ?? '—' },
          { title: 'Banned', cell: (b) => when(b.banned_at), sort: 'banned_at' },
          { title: 'Expires', cell: (b) => (b.expires_at ? when(b.expires_at) : 'never / unknown'), sort: 'expires_at' },
          {
            title: 'Actions',
            cell: (b) => (
              <button type="button" class="secondary" onClick={() => void row.run(async () => (await api('DELETE', `/admin/bans/${encodeURIComponent(b.ip)}`), reload()))}>
                Unban <span class="visually-hidden">{b.ip}</span>
              </button>
            ),
          },
        ]}
      />
    </Page>
  );
}
