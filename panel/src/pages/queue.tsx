import { useState } from 'preact/hooks';
import { api, qs } from '../api';
import { ErrorNote, Field, PAGE_SIZE, Page, Pager, useAction, useLoad, when } from '../ui';

type Entry = { queue_id: string; queue_name: string; arrival_time: string; message_size: number; sender: string; recipients: { address: string; delay_reason: string | null }[] };
type PageOf<T> = { items: T[]; total: number };
const QUEUES = ['', 'maildrop', 'incoming', 'active', 'deferred', 'hold'];

export function Queue() {
  const [form, setForm] = useState({ queue: '', sender: '', recipient: '' });
  const [filter, setFilter] = useState(form);
  const [offset, setOffset] = useState(0);
  const list = useLoad(() => api<PageOf<Entry>>('GET', `/admin/queue${qs({ ...filter, limit: PAGE_SIZE, offset })}`), [filter, offset]);
  const [pending, setPending] = useState<number | null>(null);
  const row = useAction();
  const bulk = useAction();
  const set = (k: keyof typeof form) => (v: string) => setForm({ ...form, [k]: v });
  const act = (path: string, method = 'POST') => void row.run(async () => (await api(method, path), list.reload()));

  // A bulk delete first counts what the filter matches; only then can it be confirmed.
  const count = () => void bulk.run(async () => setPending((await api<{ count: number }>('DELETE', `/admin/queue${qs({ ...filter, dry_run: 'true' })}`)).count));
  const deleteAll = () =>
    void bulk.run(async () => {
      await api('DELETE', `/admin/queue${qs(filter)}`);
      setPending(null);
      list.reload();
    });

  return (
    <Page title="Queue">
      <form class="row" aria-label="Filter the queue" onSubmit={(e) => (e.preventDefault(), setOffset(0), setPending(null), setFilter(form))}>
        <div class="field">
          <label for="queue-name">Queue</label>
          <select id="queue-name" value={form.queue} onChange={(e) => set('queue')((e.currentTarget as HTMLSelectElement).value)}>
            {QUEUES.map((q) => <option key={q} value={q}>{q || 'all'}</option>)}
          </select>
        </div>
        <Field label="Sender" name="sender" value={form.sender} onInput={set('sender')} error={list.error} hint="address or @domain" />
        <Field label="Recipient" name="recipient" value={form.recipient} onInput={set('recipient')} error={list.error} hint="address or @domain" />
        <button type="submit" class="secondary">Filter</button>
      </form>
      <ErrorNote error={list.error} fields={['sender', 'recipient', 'queue']} />
      <div class="row">
        <button type="button" class="secondary" onClick={count} disabled={bulk.busy}>Count matching messages for a bulk delete</button>
        {pending !== null && (
          <span role="status">
            {pending} message(s) match.{' '}
            {pending > 0 && <button type="button" class="danger" onClick={deleteAll}>Delete {pending} message(s)</button>}
          </span>
        )}
      </div>
      <ErrorNote error={bulk.error ?? row.error} />
      {list.data && (
        <>
          <div class="table-wrap" tabIndex={0} role="region" aria-label="Table (scrolls sideways on small screens)">
            <table>
              <thead><tr><th>ID</th><th>Queue</th><th>Arrived</th><th>Size</th><th>Sender</th><th>Recipients</th><th>Actions</th></tr></thead>
              <tbody>
                {list.data.items.map((m) => (
                  <tr key={m.queue_id}>
                    <td><code>{m.queue_id}</code></td>
                    <td>{m.queue_name}</td>
                    <td>{when(m.arrival_time)}</td>
                    <td>{m.message_size} B</td>
                    <td>{m.sender}</td>
                    <td>{m.recipients.map((r) => <div key={r.address}>{r.address}{r.delay_reason && <small> — {r.delay_reason}</small>}</div>)}</td>
                    <td>
                      {m.queue_name === 'hold'
                        ? <button type="button" class="secondary" onClick={() => act(`/admin/queue/${m.queue_id}/release`)}>Release <span class="visually-hidden">{m.queue_id}</span></button>
                        : <button type="button" class="secondary" onClick={() => act(`/admin/queue/${m.queue_id}/hold`)}>Hold <span class="visually-hidden">{m.queue_id}</span></button>}
                      <button type="button" class="danger" onClick={() => act(`/admin/queue/${m.queue_id}`, 'DELETE')}>Delete <span class="visually-hidden">{m.queue_id}</span></button>
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
