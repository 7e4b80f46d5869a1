import type { ComponentChildren } from 'preact';
import { useCallback, useEffect, useId, useRef, useState } from 'preact/hooks';
import { api, ApiError, fieldOf } from './api';
import type { FieldError } from './api';

/** Loads data and reloads it on demand; errors are kept to show. */
export function useLoad<T>(load: () => Promise<T>, deps: unknown[]): { data: T | undefined; error: ApiError | null; reload: () => void } {
  const [data, setData] = useState<T | undefined>(undefined);
  const [error, setError] = useState<ApiError | null>(null);
  const [tick, setTick] = useState(0);
  useEffect(() => {
    let live = true;
    load().then(
      (d) => live && (setData(d), setError(null)),
      (e: unknown) => live && setError(e instanceof ApiError ? e : new ApiError(0, String(e))),
    );
    return () => {
      live = false;
    };
  }, [...deps, tick]);
  return { data, error, reload: useCallback(() => setTick((t) => t + 1), []) };
}

/** Runs a form action; keeps its error (for the fields it names) and whether it is busy. */
export function useAction(): { busy: boolean; error: ApiError | null; run: (fn: () => Promise<void>) => Promise<boolean>; clear: () => void } {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<ApiError | null>(null);
  const run = async (fn: () => Promise<void>): Promise<boolean> => {
    setBusy(true);
    setError(null);
    try {
      await fn();
      return true;
    } catch (e) {
      setError(e instanceof ApiError ? e : new ApiError(0, String(e)));
      return false;
    } finally {
      setBusy(false);
    }
  };
  return { busy, error, run, clear: () => setError(null) };
}

/**
 * Where a form shows an API error — the one mechanism of every form: each
 * message of `errors[]` at the form field it names (`body.x`, `querystring.x`,
 * `params.x`, `/x` or `x`, also `x.0` / `x[0]` of a list); what names none of
 * the form's fields (or a refusal with no `errors[]`) at the form's main field,
 * or, for a form without one, in its note (ErrorNote).
 */
export type FormErrors = {
  /** The message to show at this field (undefined: the field is fine). */
  at: (field: string) => string | undefined;
  /** The message no field of the form shows (for ErrorNote). */
  note: string | undefined;
};

type FormErrorOptions = {
  /** The field that shows an error naming none of the form's fields; a function may choose by the error (its status). */
  primary?: string | ((error: ApiError) => string | undefined);
  /** The API's name of a field → the form's field showing it (e.g. the path's `id` → the account input). */
  alias?: Record<string, string>;
};

export function formErrors(error: ApiError | null, fields: string[], options: FormErrorOptions = {}): FormErrors {
  if (!error) return { at: () => undefined, note: undefined };
  const byField = new Map<string, string[]>();
  const unclaimed: FieldError[] = [];
  for (const e of error.errors) {
    const name = fieldOf(e.path);
    const head = name.split(/[.[]/)[0] ?? name;
    const field = fields.includes(name) ? name : fields.includes(head) ? head : (options.alias?.[name] ?? options.alias?.[head]);
    if (field !== undefined) byField.set(field, [...(byField.get(field) ?? []), e.message]);
    else unclaimed.push(e);
  }
  // Nothing named, or some names no field here: the whole message (the API words its detail for people).
  const rest = error.errors.length === 0 || unclaimed.length === error.errors.length ? error.detail : unclaimed.length > 0 ? unclaimed.map((e) => `${fieldOf(e.path)}: ${e.message}`).join('; ') : undefined;
  const primary = typeof options.primary === 'function' ? options.primary(error) : options.primary;
  if (rest !== undefined && primary !== undefined) byField.set(primary, [...(byField.get(primary) ?? []), rest]);
  return {
    at: (field) => byField.get(field)?.join('; '),
    note: primary === undefined ? rest : undefined,
  };
}

/** The first message of several sources (two forms whose errors may concern the same field). */
export const firstOf = (...all: (FormErrors | null | undefined)[]): FormErrors => ({
  at: (field) => all.map((e) => e?.at(field)).find((m) => m !== undefined),
  note: all.map((e) => e?.note).find((m) => m !== undefined),
});

/**
 * The attributes that tie an input to its message (or its hint) for screen
 * readers, for inputs that are not a Field (table cells, selects, radios).
 */
export function described(id: string, message: string | undefined, hint = false): { 'aria-invalid'?: 'true'; 'aria-describedby'?: string } {
  if (message) return { 'aria-invalid': 'true', 'aria-describedby': `${id}-err` };
  return hint ? { 'aria-describedby': `${id}-hint` } : {};
}

/** The message (id `<id>-err`, announced) or the hint (id `<id>-hint`) under an input. */
export function FieldMessage({ id, message, hint }: { id: string; message: string | undefined; hint?: string | undefined }) {
  if (message) return <small id={`${id}-err`} class="error" role="alert">{message}</small>;
  return hint ? <small id={`${id}-hint`}>{hint}</small> : null;
}

type FieldProps = {
  label: string;
  name: string;
  value: string;
  onInput: (v: string) => void;
  /** The form's errors (formErrors): this field shows the message for `name`. */
  errors?: FormErrors | null;
  type?: 'text' | 'password';
  hint?: string;
  autocomplete?: string;
  inputMode?: 'text' | 'numeric' | 'decimal' | 'tel' | 'email';
  required?: boolean;
};

/** A labelled input with the API's message for it right below, tied to it for screen readers. */
export function Field(p: FieldProps) {
  const id = useId();
  const message = p.errors?.at(p.name);
  return (
    <div class="field">
      <label for={id}>{p.label}</label>
      <input
        id={id}
        name={p.name}
        // Preact types text and password inputs apart; both take the same attributes here.
        type={(p.type ?? 'text') as 'text'}
        value={p.value}
        autocomplete={p.autocomplete ?? 'off'}
        inputMode={p.inputMode}
        required={p.required}
        {...described(id, message, p.hint !== undefined)}
        onInput={(e) => p.onInput((e.currentTarget as HTMLInputElement).value)}
      />
      <FieldMessage id={id} message={message} hint={p.hint} />
    </div>
  );
}

/** The error of a form that no field of it shows (formErrors' note), or of a load or a row action (an ApiError). */
export function ErrorNote({ error, errors }: { error?: ApiError | null; errors?: FormErrors | null }) {
  const text = errors ? errors.note : error?.detail;
  if (!text) return null;
  return <p class="error" role="alert">{text}</p>;
}

export function Page({ title, children }: { title: string; children: ComponentChildren }) {
  const heading = useRef<HTMLHeadingElement>(null);
  useEffect(() => {
    document.title = `${title} · mailsvc`;
  }, [title]);
  // A page that replaces its "Loading…" stand-in (or remounts after a reload) takes over the heading's
  // focus: the old heading is gone, and focus would otherwise fall back to BODY. Focus anywhere else stays.
  useEffect(() => {
    const active = document.activeElement;
    if (active === null || active === document.body) heading.current?.focus();
  }, []);
  return (
    <section aria-labelledby="page-title">
      <h1 id="page-title" ref={heading} tabIndex={-1}>{title}</h1>
      {children}
    </section>
  );
}

export const PAGE_SIZE = 25;

/**
 * Previous/next over a server-side page. Its landmark is named for what it is,
 * paging through one list ("Paging through Accounts"): the sidebar is the
 * panel's one navigation named "Pages".
 */
export function Pager({ total, offset, onOffset, label }: { total: number; offset: number; onOffset: (o: number) => void; label: string }) {
  if (total <= PAGE_SIZE) return <p class="muted">{total} in all</p>;
  return (
    <nav class="pager" aria-label={`Paging through ${label}`}>
      <button type="button" disabled={offset === 0} onClick={() => onOffset(Math.max(0, offset - PAGE_SIZE))}>Previous</button>
      <span>{offset + 1}–{Math.min(total, offset + PAGE_SIZE)} of {total}</span>
      <button type="button" disabled={offset + PAGE_SIZE >= total} onClick={() => onOffset(offset + PAGE_SIZE)}>Next</button>
    </nav>
  );
}

/** A secret shown once, with a copy button. */
export function ShownOnce({ label, value }: { label: string; value: string }) {
  const [copied, setCopied] = useState(false);
  return (
    <div class="once" role="status">
      <p><strong>{label}</strong> — shown only now: copy it.</p>
      <code data-testid="shown-once">{value}</code>
      <button type="button" onClick={() => void navigator.clipboard?.writeText(value).then(() => setCopied(true), () => setCopied(false))}>
        {copied ? 'Copied' : 'Copy'}
      </button>
    </div>
  );
}

export const when = (iso: string | null | undefined): string => (iso ? new Date(iso).toLocaleString() : '—');

export type Job<R = unknown> = { id: string; kind: string; state: 'queued' | 'running' | 'succeeded' | 'failed'; progress: number; message: string; result: R | null };

/** Follows a job (GET /admin/jobs/{id}) until it ends; `onEnd` runs once then. */
export function useJob<R = unknown>(jobId: string | null, onEnd?: (job: Job<R>) => void): Job<R> | null {
  const [job, setJob] = useState<Job<R> | null>(null);
  useEffect(() => {
    setJob(null);
    if (!jobId) return undefined;
    let stop = false;
    const poll = async (): Promise<void> => {
      while (!stop) {
        const j = await api<Job<R>>('GET', `/admin/jobs/${encodeURIComponent(jobId)}`).catch(() => null);
        if (stop) return;
        if (j) setJob(j);
        if (!j || j.state === 'succeeded' || j.state === 'failed') {
          if (j) onEnd?.(j);
          return;
        }
        await new Promise((r) => setTimeout(r, 400));
      }
    };
    void poll();
    return () => void (stop = true);
  }, [jobId]);
  return job;
}

/** A job's progress bar and message, announced politely to screen readers. */
export function JobProgress({ job, label }: { job: Job | null; label: string }) {
  if (!job) return null;
  return (
    <div role="status" aria-live="polite" class="job" data-testid={`job-${job.kind}`} data-state={job.state}>
      <progress max={1} value={job.progress} aria-label={label} /> <span class={job.state === 'failed' ? 'error' : job.state === 'succeeded' ? 'ok' : undefined}>{job.state}</span>: {job.message}
    </div>
  );
}


/** The current route's query parameter (`#/page?name=value`). */
export const hashParam = (name: string): string => new URLSearchParams(location.hash.split('?')[1] ?? '').get(name) ?? '';

/** A page reached through the search for one of its settings (`?setting=KEY`) focuses that setting's input (id `<prefix><KEY>`) once it is drawn (`ready`). */
export function useFocusSetting(prefix: string, ready = true): void {
  const done = useRef(false);
  useEffect(() => {
    const key = hashParam('setting');
    if (!key || !ready || done.current) return;
    const el = document.getElementById(`${prefix}${key}`);
    if (!el) return;
    done.current = true;
    el.scrollIntoView({ block: 'center' });
    el.focus();
  }, [ready]);
}

export { bytes, plural } from './format';
