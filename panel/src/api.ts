/** Every call the panel makes: /panel/session* and /panel/api/<the API path>. Nothing else, no other origin. */

export type FieldError = { path: string; message: string };

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly detail: string,
    readonly errors: FieldError[] = [],
    readonly reauth = false,
    readonly retryAfter: number | null = null,
  ) {
    super(detail);
  }
}

/** The field an errors[] path names: body.x, querystring.x, params.x, /x or x → x (formErrors in ui.tsx places it). */
export const fieldOf = (path: string): string => path.replace(/^(body|querystring|params)(\.|$)/, '').replace(/^\//, '');

export type Session = { signed_in: true; csrf_token: string; expires_at: string; idle_until: string; fresh_until: string };

let csrf = '';
let onSignedOut: () => void = () => undefined;
let onReauth: () => Promise<boolean> = async () => false;

export function setSession(s: Session | null): void {
  csrf = s?.csrf_token ?? '';
}
export function onSessionEvents(signedOut: () => void, reauth: () => Promise<boolean>): void {
  onSignedOut = signedOut;
  onReauth = reauth;
}

async function send(method: string, url: string, body?: unknown): Promise<Response> {
  const headers: Record<string, string> = { accept: 'application/json' };
  if (method !== 'GET') headers['x-csrf-token'] = csrf;
  if (body !== undefined) headers['content-type'] = 'application/json';
  return fetch(url, { method, headers, credentials: 'same-origin', body: body === undefined ? undefined : JSON.stringify(body) });
}

async function answer<T>(res: Response): Promise<T> {
  const text = await res.text();
  const data = text ? (JSON.parse(text) as unknown) : null;
  if (res.ok) return data as T;
  const d = (data ?? {}) as { detail?: string; errors?: FieldError[] };
  const retry = res.headers.get('retry-after');
  let detail = d.detail ?? `HTTP ${res.status}`;
  // The lockout: say when to try again.
  if (res.status === 429 && retry) detail = `${detail}: try again in ${Math.max(1, Math.ceil(Number(retry) / 60))} minute(s)`;
  throw new ApiError(res.status, detail, d.errors ?? [], res.headers.get('x-mailsvc-reauth') === 'required', retry ? Number(retry) : null);
}

/** A call to the panel's own session endpoints. */
export async function session<T>(method: string, path: string, body?: unknown): Promise<T> {
  return answer<T>(await send(method, `/panel/session${path}`, body));
}

/** A call to the API through the panel's session. A 401 signs out; a destructive action may ask for the second factor again. */
export async function api<T>(method: string, path: string, body?: unknown): Promise<T> {
  try {
    return await answer<T>(await send(method, `/panel/api${path}`, body));
  } catch (err) {
    if (err instanceof ApiError && err.status === 401) onSignedOut();
    if (err instanceof ApiError && err.reauth && (await onReauth())) return answer<T>(await send(method, `/panel/api${path}`, body));
    throw err;
  }
}

/** A query string of the filled-in values only. */
export function qs(params: Record<string, string | number | undefined>): string {
  const p = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== '') p.set(k, String(v));
  const s = p.toString();
  return s ? `?${s}` : '';
}

/** Requests started before the page that uses them is drawn (beside the session check); each is taken once, and only soon after. */
const early = new Map<string, { at: number; answer: Promise<unknown> }>();
const EARLY_MS = 10_000;
export function prefetch(path: string): void {
  const answer = api<unknown>('GET', path);
  // Not taken (signed out): its rejection is not an unhandled one.
  answer.catch(() => undefined);
  early.set(path, { at: Date.now(), answer });
}
/** Forgets the prefetched answers (the session check failed: they are refusals). */
export function dropPrefetched(): void {
  early.clear();
}
/** A GET, answered by the prefetched request of the same path when there is a recent one. */
export function getOnce<T>(path: string): Promise<T> {
  const hit = early.get(path);
  early.delete(path);
  return hit && Date.now() - hit.at < EARLY_MS ? (hit.answer as Promise<T>) : api<T>('GET', path);
}
