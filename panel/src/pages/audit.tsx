import { Page, when } from '../ui';
import { List } from '../list';

type Entry = { id: number; at: string; actor: string; source: string; action: string; target: string | null; summary: Record<string, unknown>; result: string };

export function Audit() {
  return (
    <Page title="Audit log">
      <List<Entry>
        label="Audit log"
        path="/admin/audit"
        filters={[{ name: 'action', label: 'Action', hint: 'exact, e.g. POST /domains' }, { name: 'target', label: 'Target' }, { name: 'actor', label: 'Who', hint: 'exact, e.g. admin' }]}
        rowKey={(a) => a.id}
        defaultSort="-at"
        empty={(filtered) => (filtered ? 'No change is recorded for this filter: clear it to see every record.' : 'Nothing is recorded yet: every change made through the API, the panel or the CLI shows here.')}
        columns={[
          { title: 'When', cell: (a) => when(a.at), sort: 'at' },
          { title: 'Who', cell: (a) => a.actor, sort: 'actor' },
          { title: 'From', cell: (a) => a.source, sort: 'source' },
          { title: 'Action', cell: (a) => a.action, sort: 'action' },
          { title: 'Target', cell: (a) => a.target ?? '—' },
          { title: 'Result', cell: (a) => <span class={a.result === 'ok' ? 'ok' : 'error'}>{a.result}</span>, sort: 'result' },
          { title: 'Summary', cell: (a) => <small>{Object.entries(a.summary).map(([k, v]) => `${k}=${String(v)}`).join(' ')}</small> },
        ]}
      />
    </Page>
  );
}
