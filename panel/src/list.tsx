import type { ComponentChildren } from 'preact';
import { useCallback, useEffect, useState } from 'preact/hooks';
import { api, qs } from './api';
import type { ApiError } from './api';
import { described, ErrorNote, Field, FieldMessage, formErrors, PAGE_SIZE, Pager, useLoad } from './ui';
import type { FormErrors } from './ui';

/** One column: its heading and what a row shows in it. */
export type Column<T> = { title: string; cell: (row: T) => ComponentChildren };

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
  /** What an empty list says. */
  empty?: string;
  /** The API answers a bare array (not paged): shown whole, without a pager. */
  unpaged?: boolean;
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

/**
 * The list pattern of every list page: a filter form (values go to the API,
 * which filters and pages on the server), the API's error next to the filter
 * field it names (or above the table), a table that scrolls sideways inside
 * its own box on a small screen, and previous/next over server pages.
 */
export function List<T>(p: ListProps<T>) {
  const blank = Object.fromEntries((p.filters ?? []).map((f) => [f.name, p.initial?.[f.name] ?? '']));
  const [form, setForm] = useState<Record<string, string>>(blank);
  const [filter, setFilter] = useState<Record<string, string>>(blank);
  const [offset, setOffset] = useState(0);
  const queryKey = JSON.stringify(p.query ?? {});
  const list = useLoad(
    async (): Promise<PageOf<T>> => {
      const params = p.unpaged ? { ...p.query, ...filter } : { ...p.query, ...filter, limit: PAGE_SIZE, offset };
      const answer = await api<PageOf<T> | T[]>('GET', `${p.path}${qs(params)}`);
      return Array.isArray(answer) ? { items: answer, total: answer.length } : answer;
    },
    [p.path, queryKey, JSON.stringify(filter), offset, p.version ?? 0],
  );
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
              <thead><tr>{p.columns.map((c) => <th key={c.title} scope="col">{c.title}</th>)}</tr></thead>
              <tbody>
                {data.items.map((row) => (
                  <tr key={p.rowKey(row)}>{p.columns.map((c) => <td key={c.title}>{c.cell(row)}</td>)}</tr>
                ))}
              </tbody>
            </table>
          </div>
          {data.items.length === 0 ? <p class="muted">{p.empty ?? 'Nothing to show.'}</p> : p.unpaged ? null : <Pager total={data.total} offset={offset} onOffset={setOffset} />}
        </>
      )}
    </div>
  );
}
