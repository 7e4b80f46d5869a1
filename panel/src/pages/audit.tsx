import { Page, when } from '../ui';
import { List } from '../list';

type Entry = { id: number; at: string; actor: string; source: string; action: string; target: string | null; summary: Record<string, unknown>; result: string };

export function Audit() {
  return (
    <Page title="Audit log">
      <List<Entry>
        label="Audit log"
        path="/admin/audit"
        filters={[{ name: 'action', label: 'Action', hint: 'exact, e.g. POST /domains' }, { name: 'target', label: 'Target' }]}
        rowKey={(a) => a.id}
        columns={[
          { title: 'When', cell: (a) => when(a.at) },
          { title: 'Who', cell: (a) => a.actor },
          { title: 'From', cell: (a) => a.source },
          { title: 'Action', cell: (a) => a.action },
          { title: 'Target', cell: (a) => a.target ?? '—' },
          { title: 'Result', cell: (a) => <span class={a.result === 'ok' ? 'ok' : 'error'}>{a.result}</span> },
          { title: 'Summary', cell: (a) => <small>{Object.entries(a.summary).map(([k, v]) => `${k}=${String(v)}`).join(' ')}</small> },
        ]}
      />
    </Page>
  );
}
