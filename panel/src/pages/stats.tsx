import { useState } from 'preact/hooks';
import { api, qs } from '../api';
import { bytes, described, ErrorNote, Field, FieldMessage, formErrors, Page, useLoad } from '../ui';
import { List } from '../list';
import { TrafficChart } from '../chart';
import type { Timeline } from '../chart';

type Figures = { messages: number; bytes: number };
type Summary = { from: string; to: string; total: Figures; inbound: Figures; outbound: Figures; local: Figures };
type MailboxRow = { mailbox: string; inbound: Figures; outbound: Figures; local: Figures };
const DIRECTIONS = ['inbound', 'outbound', 'local'] as const;
const DAY = 86_400_000;

/** YYYY-MM-DD (UTC) of a time. */
export const isoDay = (ms: number): string => new Date(ms).toISOString().slice(0, 10);

const cell = (f: Figures) => `${f.messages} (${bytes(f.bytes)})`;

/** Statistics: totals per direction, the timeline chart and the per-mailbox table for a chosen range (UTC days). */
export function Stats() {
  const today = Date.now();
  const [form, setForm] = useState({ from: isoDay(today - 6 * DAY), to: isoDay(today + DAY), direction: '' });
  const [range, setRange] = useState(form);
  const query = { from: range.from, to: range.to, direction: range.direction || undefined };
  const summary = useLoad(() => api<Summary>('GET', `/stats/summary${qs(query)}`), [JSON.stringify(range)]);
  const timeline = useLoad(() => api<Timeline>('GET', `/stats/timeline${qs(query)}`), [JSON.stringify(range)]);
  const error = summary.error ?? timeline.error;
  // The API names no field for a bad range: its message goes next to the From field.
  const rangeError = error && (error.status === 400 || error.status === 422) ? error : null;
  const errors = formErrors(rangeError, ['from', 'to', 'direction'], { primary: (e) => (/^to\b/.test(e.detail) ? 'to' : 'from') });

  return (
    <Page title="Statistics">
      <form class="row" aria-label="Range" onSubmit={(e) => (e.preventDefault(), setRange({ ...form, from: form.from.trim(), to: form.to.trim() }))}>
        <Field label="From (UTC day or time)" name="from" value={form.from} onInput={(v) => setForm({ ...form, from: v })} errors={errors} hint="YYYY-MM-DD" />
        <Field label="To (exclusive)" name="to" value={form.to} onInput={(v) => setForm({ ...form, to: v })} errors={errors} hint="YYYY-MM-DD" />
        <div class="field">
          <label for="stats-direction">Direction</label>
          <select id="stats-direction" name="direction" value={form.direction} {...described('stats-direction', errors.at('direction'))} onChange={(e) => setForm({ ...form, direction: (e.currentTarget as HTMLSelectElement).value })}>
            <option value="">all</option>
            {DIRECTIONS.map((d) => <option key={d} value={d}>{d}</option>)}
          </select>
          <FieldMessage id="stats-direction" message={errors.at('direction')} />
        </div>
        <button type="submit" class="secondary">Show</button>
      </form>
      {!rangeError && <ErrorNote error={error} />}
      {summary.data && (
        <div class="table-wrap" tabIndex={0} role="region" aria-label="Totals (scrolls sideways on small screens)">
          <table>
            <caption class="muted">Totals from {summary.data.from.slice(0, 16).replace('T', ' ')} to {summary.data.to.slice(0, 16).replace('T', ' ')} UTC</caption>
            <thead><tr><th scope="col">Direction</th><th scope="col">Messages</th><th scope="col">Bytes</th></tr></thead>
            <tbody>
              {DIRECTIONS.map((d) => (
                <tr key={d}><th scope="row">{d}</th><td data-testid={`total-${d}`}>{summary.data![d].messages}</td><td>{bytes(summary.data![d].bytes)}</td></tr>
              ))}
              <tr><th scope="row">total</th><td data-testid="total-all">{summary.data.total.messages}</td><td data-testid="total-bytes">{bytes(summary.data.total.bytes)}</td></tr>
            </tbody>
          </table>
        </div>
      )}
      {timeline.data && <TrafficChart timeline={timeline.data} title="Messages" />}
      <h2>Per mailbox</h2>
      <List<MailboxRow>
        label="Traffic per mailbox"
        path="/stats/mailboxes"
        query={query}
        filters={[{ name: 'mailbox', label: 'Mailbox', hint: 'one address' }]}
        rowKey={(m) => m.mailbox}
        empty="No traffic in this range."
        columns={[
          { title: 'Mailbox', cell: (m) => m.mailbox },
          ...DIRECTIONS.map((d) => ({ title: d[0]!.toUpperCase() + d.slice(1), cell: (m: MailboxRow) => cell(m[d]) })),
        ]}
      />
    </Page>
  );
}
