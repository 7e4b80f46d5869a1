import { useState } from 'preact/hooks';
import { api, qs } from '../api';
import { ErrorNote, Page, plural, useAction, when } from '../ui';
import { List, useVersion } from '../list';

type Entry = { queue_id: string; queue_name: string; arrival_time: string; message_size: number; sender: string; recipients: { address: string; delay_reason: string | null }[] };
const QUEUES = ['', 'maildrop', 'incoming', 'active', 'deferred', 'hold'];

/** The selected messages held, released or deleted in one call; its answer in words. */
async function batch(action: 'hold' | 'release' | 'delete', rows: Entry[]): Promise<string> {
  const r = await api<{ action: string; requested: number; count: number }>('POST', '/admin/queue/batch', { action, ids: rows.map((m) => m.queue_id) });
  const missed = r.requested - r.count;
  return `${plural(r.count, 'message')} ${r.action}${missed > 0 ? ` (${missed} already ${action === 'delete' ? 'gone' : action === 'hold' ? 'on hold or gone' : 'not on hold or gone'})` : ''}.`;
}

export function Queue() {
  const [version, reload] = useVersion();
  const [filter, setFilter] = useState<Record<string, string>>({});
  const [pending, setPending] = useState<number | null>(null);
  const row = useAction();
  const bulk = useAction();
  const act = (path: string, method = 'POST') => void row.run(async () => (await api(method, path), reload()));

  // A bulk delete first counts what the filter matches; only then can it be confirmed.
  const count = () => void bulk.run(async () => setPending((await api<{ count: number }>('DELETE', `/admin/queue${qs({ ...filter, dry_run: 'true' })}`)).count));
  const deleteAll = () =>
    void bulk.run(async () => {
      await api('DELETE', `/admin/queue${qs(filter)}`);
      setPending(null);
      reload();
    });

  return (
    <Page title="Queue">
      <List<Entry>
        label="Queue"
        path="/admin/queue"
        version={version}
        onFilter={(f) => (setPending(null), setFilter(f))}
        filters={[
          { name: 'queue', label: 'Queue', options: QUEUES.map((q) => ({ value: q, label: q || 'all' })) },
          { name: 'sender', label: 'Sender', hint: 'address or @domain' },
          { name: 'recipient', label: 'Recipient', hint: 'address or @domain' },
        ]}
        rowKey={(m) => m.queue_id}
        empty="The queue is empty: nothing waits for delivery. Deferred mail and mail put on hold shows here."
        bulk={{
          noun: ['message', 'messages'],
          name: (m) => `message ${m.queue_id}`,
          actions: [
            { label: 'Hold', run: (rows) => batch('hold', rows) },
            { label: 'Release', run: (rows) => batch('release', rows) },
            { label: 'Delete', danger: true, confirm: (n) => `Delete ${n} from the queue? Their senders are not told.`, run: (rows) => batch('delete', rows) },
          ],
        }}
        columns={[
          { title: 'ID', cell: (m) => <code>{m.queue_id}</code> },
          { title: 'Queue', cell: (m) => m.queue_name, sort: 'queue_name' },
          { title: 'Arrived', cell: (m) => when(m.arrival_time), sort: 'arrival_time' },
          { title: 'Size', cell: (m) => `${m.message_size} B`, sort: 'message_size' },
          { title: 'Sender', cell: (m) => m.sender, sort: 'sender' },
          { title: 'Recipients', cell: (m) => m.recipients.map((r) => <div key={r.address}>{r.address}{r.delay_reason && <small> — {r.delay_reason}</small>}</div>) },
          {
            title: 'Actions',
            cell: (m) => (
              <>
                {m.queue_name === 'hold'
                  ? <button type="button" class="secondary" onClick={() => act(`/admin/queue/${m.queue_id}/release`)}>Release <span class="visually-hidden">{m.queue_id}</span></button>
                  : <button type="button" class="secondary" onClick={() => act(`/admin/queue/${m.queue_id}/hold`)}>Hold <span class="visually-hidden">{m.queue_id}</span></button>}
                <button type="button" class="danger" onClick={() => act(`/admin/queue/${m.queue_id}`, 'DELETE')}>Delete <span class="visually-hidden">{m.queue_id}</span></button>
              </>
            ),
          },
        ]}
      />
      <div class="row">
        <button type="button" class="secondary" onClick={count} disabled={bulk.busy}>Count matching messages for a bulk delete</button>
        {pending !== null && (
          <span role="status">
            {plural(pending, 'message')} {pending === 1 ? 'matches' : 'match'}.{' '}
            {pending > 0 && <button type="button" class="danger" onClick={deleteAll}>Delete {plural(pending, 'message')}</button>}
          </span>
        )}
      </div>
      <ErrorNote error={bulk.error ?? row.error} />
    </Page>
  );
}
