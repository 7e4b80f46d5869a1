import type { ComponentChildren } from 'preact';
import { useCallback, useEffect, useId, useState } from 'preact/hooks';
import { ApiError } from './api';

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

type FieldProps = {
  label: string;
  name: string;
  value: string;
  onInput: (v: string) => void;
  error?: ApiError | null;
  /** This field shows the error when the API names no field. */
  primary?: boolean;
  type?: 'text' | 'password';
  hint?: string;
  autocomplete?: string;
  inputMode?: 'text' | 'numeric' | 'decimal' | 'tel' | 'email';
  required?: boolean;
};

/** A labelled input with the API's message for it right below, tied to it for screen readers. */
export function Field(p: FieldProps) {
  const id = useId();
  const message = p.error ? (p.error.forField(p.name) ?? (p.primary && p.error.errors.length === 0 ? p.error.detail : undefined)) : undefined;
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
        aria-invalid={message ? 'true' : undefined}
        aria-describedby={message ? `${id}-err` : p.hint ? `${id}-hint` : undefined}
        onInput={(e) => p.onInput((e.currentTarget as HTMLInputElement).value)}
      />
      {p.hint && !message && <small id={`${id}-hint`}>{p.hint}</small>}
      {message && <small id={`${id}-err`} class="error" role="alert">{message}</small>}
    </div>
  );
}

/** The error of a form that names none of its fields, or of a load. */
export function ErrorNote({ error, fields = [] }: { error: ApiError | null; fields?: string[] }) {
  if (!error) return null;
  if (error.errors.length > 0 && fields.some((f) => error.forField(f))) return null;
  return <p class="error" role="alert">{error.detail}</p>;
}

export function Page({ title, children }: { title: string; children: ComponentChildren }) {
  useEffect(() => {
    document.title = `${title} · mailsvc`;
  }, [title]);
  return (
    <section aria-labelledby="page-title">
      <h1 id="page-title" tabIndex={-1}>{title}</h1>
      {children}
    </section>
  );
}

export const PAGE_SIZE = 25;

/** Previous/next over a server-side page. */
export function Pager({ total, offset, onOffset }: { total: number; offset: number; onOffset: (o: number) => void }) {
  if (total <= PAGE_SIZE) return <p class="muted">{total} in all</p>;
  return (
    <nav class="pager" aria-label="Pages">
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
