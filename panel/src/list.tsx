import type { ComponentChildren } from 'preact';
import { useCallback, useEffect, useState } from 'preact/hooks';
import { api, qs } from './api';
import type { ApiError } from './api';
import { described, ErrorNote, Field, FieldMessage, formErrors, hashParam, PAGE_SIZE, Pager, plural, useAction, useLoad } from './ui';
import type { FormErrors } from './ui';

/** No row selected (shared, never changed). */
const NONE: ReadonlySet<string> = new Set();

/** One column: its heading, what a row shows in it and, when the API can order by it, its `sort` field (the heading becomes a sort button). */
export type Column<T> = { title: string; cell: (row: T) => ComponentChildren; sort?: string };

/** An action on the selected rows, through an API that takes several at once. */
export type BulkAction<T> = {
  /** The verb on its button: "Delete" gives "Delete 3 selected". */
  label: string;
  danger?: boolean;
  /** Asked before it runs (the count in words); none: it runs at once. */
  confirm?: (count: string) => string;
  /** Acts on exactly these rows; what it answers is shown where the action was asked. */
  run: (rows: T[]) => Promise<string>;
};

/** Bulk selection: a checkbox per row, a select-all in the header, an action bar naming the count. */
export type Bulk<T> = {
  /** What one row is called, one and many ("message", "messages"). */
  noun: [string, string];
  /** Names a row's checkbox: "Select <name>". */
  name: (row: T) => string;
  actions: BulkAction<T>[];
};

/** A filter above the table: a text input, or a choice when `options` is given ('' is "all"). */
export type Filter = { name: string; label: string; hint?: string; options?: { value: string; label: string }[] };

export type PageOf<T> = { items: T[]; total: number };

/** A counter to hand to a list as `version`: bumping it reloads the list (after a create or a delete). */
export function useVersion(): [number, () => void] {
  const [v, setV] = useState(0);
  return [v, useCallback(() => setV((n) => n + 1), [])];
}

type ListProps<T> = {
  /** Names the table (caption) and the filter form. */
  label: string;
  /** The API path of a paged list (`{items, total}`, `limit` and `offset` in the query). */
  path: string;
  columns: Column<T>[];
  rowKey: (row: T) => string | number;
  /** Filters, applied on the server when the form is submitted. */
  filters?: Filter[];
  /** Initial filter values. */
  initial?: Record<string, string>;
  /** Fixed query parameters (a time range …), always sent. */
  query?: Record<string, string | undefined>;
  /** Bumped by the page to reload (see useVersion). */
  version?: number;
  /** Told of the filter in force (a bulk action acts on what the list shows). */
  onFilter?: (filter: Record<string, string>) => void;
  /** What an empty list says; a function is told whether a filter is in force (nothing matches it) or not (nothing at all). */
  empty?: string | ((filtered: boolean) => string);
  /** The API answers a bare array (not paged): shown whole, without a pager. */
  unpaged?: boolean;
  /** The order the API keeps without `sort` (`name`, `-at`): its column's heading says so. None: no column's order (postqueue's). */
  defaultSort?: string;
  /** Rows can be selected and acted on together (only where the API has such an action). */
  bulk?: Bulk<T>;
  /**
   * The page shows the list's error itself, at a field of its own (the app
   * passwords' account, which is in the path): told of every error (null once
   * the list loads), and the list then shows none.
   */
  onError?: (error: ApiError | null) => void;
};

/** A refusal of the request (400, 422) that names no filter shows at the first text filter; anything else above the table. */
export function listErrors(error: ApiError | null, filters: Filter[]): FormErrors {
  const firstText = filters.find((f) => !f.options)?.name;
  return formErrors(error, filters.map((f) => f.name), { primary: (e) => (e.status === 400 || e.status === 422 ? firstText : undefined) });
}

/** Puts `name=value` into the hash's query (or takes it out), without a new history entry or a hashchange. */
function setHashParam(name: string, value: string): void {
  const [route, query] = location.hash.split('?');
  const params = new URLSearchParams(query ?? '');
  if (value) params.set(name, value);
  else params.delete(name);
  const q = params.toString();
  history.replaceState(history.state, '', `${route ?? '#'}${q ? `?${q}` : ''}`);
}

type AriaSort = 'ascending' | 'descending' | 'none';

/**
 * The list pattern of every list page: a filter form (values go to the API,
 * which filters and pages on the server), the API's error next to the filter
 * field it names (or above the table), a table that scrolls sideways inside
 * its own box on a small screen, and previous/next over server pages. Column
 * headings with a `sort` field are buttons that ask the API for that order
 * (`sort=<field>`, again for `-<field>`), kept in the page's URL (`?sort=`);
 * with `bulk`, rows are selected by checkboxes and acted on together.
 */
export function List<T>(p: ListProps<T>) {
  const blank = Object.fromEntries((p.filters ?? []).map((f) => [f.name, p.initial?.[f.name] ?? '']));
  const [form, setForm] = useState<Record<string, string>>(blank);
  const [filter, setFilter] = useState<Record<string, string>>(blank);
  const [offset, setOffset] = useState(0);
  const sortable = p.columns.some((c) => c.sort);
  const [sort, setSort] = useState(sortable ? hashParam('sort') : '');
  const queryKey = JSON.stringify(p.query ?? {});
  const list = useLoad(
    async (): Promise<PageOf<T>> => {
      const order = sort ? { sort } : {};
      const params = p.unpaged ? { ...p.query, ...filter, ...order } : { ...p.query, ...filter, ...order, limit: PAGE_SIZE, offset };
      const answer = await api<PageOf<T> | T[]>('GET', `${p.path}${qs(params)}`);
      return Array.isArray(answer) ? { items: answer, total: answer.length } : answer;
    },
    [p.path, queryKey, JSON.stringify(filter), offset, sort, p.version ?? 0],
  );
  // Selected rows (by key) of the page shown: a new page, order, filter or reload starts with none.
  // The selection belongs to the data it was made on, so the first render of new data already
  // shows none checked (an effect that cleared it would leave one render with the old boxes ticked).
  const [picked, setPicked] = useState<{ on: unknown; keys: Set<string> }>({ on: undefined, keys: new Set() });
  const selected = picked.on === list.data ? picked.keys : NONE;
  const setSelected = (keys: Set<string>) => setPicked({ on: list.data, keys });
  const bulkRun = useAction();
  const [bulkResult, setBulkResult] = useState('');
  // A new range or path starts at the first page.
  useEffect(() => setOffset(0), [p.path, queryKey]);
  useEffect(() => p.onError?.(list.error), [list.error]);
  const errors = p.onError ? null : listErrors(list.error, p.filters ?? []);
  const submit = (e: Event) => {
    e.preventDefault();
    const trimmed = Object.fromEntries(Object.entries(form).map(([k, v]) => [k, v.trim()]));
    setOffset(0);
    setFilter(trimmed);
    p.onFilter?.(trimmed);
  };
  const data = list.data;

  const inForce = sort || p.defaultSort || '';
  const ariaSort = (c: Column<T>): AriaSort | undefined =>
    !c.sort ? undefined : inForce.replace(/^-/, '') !== c.sort ? 'none' : inForce.startsWith('-') ? 'descending' : 'ascending';
  const sortBy = (field: string) => {
    // The same column again turns the order around; another column starts ascending.
    const next = inForce === field ? `-${field}` : field;
    setSort(next);
    setOffset(0);
    setHashParam('sort', next);
  };

  const key = (row: T) => String(p.rowKey(row));
  const rows = data?.items ?? [];
  const chosen = rows.filter((r) => selected.has(key(r)));
  const allChosen = rows.length > 0 && chosen.length === rows.length;
  const toggle = (row: T, on: boolean) => {
    const next = new Set(selected);
    if (on) next.add(key(row));
    else next.delete(key(row));
    setSelected(next);
  };
  const act = (a: BulkAction<T>) => {
    const n = plural(chosen.length, p.bulk?.noun[0] ?? 'row', p.bulk?.noun[1]);
    if (a.confirm && !confirm(a.confirm(n))) return;
    const these = chosen;
    void bulkRun.run(async () => {
      setBulkResult('');
      setBulkResult(await a.run(these));
      list.reload();
    });
  };
  const th = (c: Column<T>) => {
    const order = ariaSort(c);
    if (order === undefined) return <th key={c.title} scope="col">{c.title}</th>;
    return (
      <th key={c.title} scope="col" aria-sort={order}>
        <button type="button" class="sort" onClick={() => sortBy(c.sort ?? '')}>
          {c.title}
          <span aria-hidden="true" class="sort-mark">{order === 'ascending' ? ' ▲' : order === 'descending' ? ' ▼' : ' ↕'}</span>
        </button>
      </th>
    );
  };

  return (
    <div class="list">
      {p.filters && p.filters.length > 0 && (
        <form class="row" onSubmit={submit} aria-label={`Filter ${p.label.toLowerCase()}`}>
          {p.filters.map((f) =>
            f.options ? (
              <div class="field" key={f.name}>
                <label for={`filter-${f.name}`}>{f.label}</label>
                <select id={`filter-${f.name}`} name={f.name} value={form[f.name]} {...described(`filter-${f.name}`, errors?.at(f.name))} onChange={(e) => setForm({ ...form, [f.name]: (e.currentTarget as HTMLSelectElement).value })}>
                  {f.options.map((o) => <option key={o.value} value={o.value}>{o.label}</option>)}
                </select>
                <FieldMessage id={`filter-${f.name}`} message={errors?.at(f.name)} />
              </div>
            ) : (
              <Field key={f.name} label={f.label} name={f.name} value={form[f.name] ?? ''} hint={f.hint} onInput={(v) => setForm({ ...form, [f.name]: v })} errors={errors} />
            ),
          )}
          <button type="submit" class="secondary">Filter</button>
        </form>
      )}
      {/* What names no filter (or a list without filters) shows above the table. */}
      <ErrorNote errors={errors} />
      {!data && !list.error && <p role="status" class="muted">Loading…</p>}
      {data && !list.error && (
        <>
          <div class="table-wrap" tabIndex={0} role="region" aria-label={`${p.label} (scrolls sideways on small screens)`}>
            <table>
              <caption class="visually-hidden">{p.label}</caption>
              <thead>
                <tr>
                  {p.bulk && (
                    <th scope="col" class="pick">
                      <input
                        type="checkbox"
                        aria-label={`Select every ${p.bulk.noun[0]} on this page`}
                        checked={allChosen}
                        disabled={rows.length === 0}
                        ref={(el) => {
                          if (el) el.indeterminate = chosen.length > 0 && !allChosen;
                        }}
                        onChange={(e) => setSelected(new Set((e.currentTarget as HTMLInputElement).checked ? rows.map(key) : []))}
                      />
                    </th>
                  )}
                  {p.columns.map(th)}
                </tr>
              </thead>
              <tbody>
                {data.items.map((row) => (
                  <tr key={p.rowKey(row)} class={selected.has(key(row)) ? 'picked' : undefined}>
                    {p.bulk && (
                      <td class="pick">
                        <input type="checkbox" aria-label={`Select ${p.bulk.name(row)}`} checked={selected.has(key(row))} onChange={(e) => toggle(row, (e.currentTarget as HTMLInputElement).checked)} />
                      </td>
                    )}
                    {p.columns.map((c) => <td key={c.title}>{c.cell(row)}</td>)}
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
          {data.items.length === 0 ? <p class="muted">{typeof p.empty === 'function' ? p.empty(Object.values(filter).some((v) => v !== '')) : (p.empty ?? 'Nothing to show.')}</p> : p.unpaged ? null : <Pager total={data.total} offset={offset} onOffset={setOffset} label={p.label} />}
        </>
      )}
      {p.bulk && (
        <div class="row bulk-bar" role="group" aria-label={`Act on the selected ${p.bulk.noun[1]}`} data-testid="bulk-bar">
          <span>{chosen.length === 0 ? `Select ${p.bulk.noun[1]} to act on several at once.` : `${plural(chosen.length, p.bulk.noun[0], p.bulk.noun[1])} selected.`}</span>
          {chosen.length > 0 &&
            p.bulk.actions.map((a) => (
              <button key={a.label} type="button" class={a.danger ? 'danger' : 'secondary'} disabled={bulkRun.busy} onClick={() => act(a)}>
                {a.label} {chosen.length} selected
              </button>
            ))}
          {bulkResult && <span class="ok" role="status" data-testid="bulk-result"><span aria-hidden="true">✓ </span>{bulkResult}</span>}
          <ErrorNote error={bulkRun.error} />
        </div>
      )}
    </div>
  );
}
