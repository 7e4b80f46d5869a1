/**
 * A probe's answer. `down`: the component answered that it does not work,
 * or nothing listens where it should. `unknown`: mailsvc could not tell (no
 * answer in time, not installed, no permission, nothing configured) — never
 * counted as down, and never as up.
 */
export type ProbeStatus = 'up' | 'down' | 'unknown';
export type Probed<T> = { status: ProbeStatus; detail: string | null } & Partial<T>;

/** Runs `fn` with a time limit of its own: a hanging component gives `unknown`, never a hanging caller. */
export async function probe<T extends object>(timeoutMs: number, fn: () => Promise<Probed<T>>): Promise<Probed<T>> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<Probed<T>>((resolve) => {
    timer = setTimeout(() => resolve({ status: 'unknown', detail: `no answer within ${timeoutMs} ms` } as Probed<T>), timeoutMs);
    timer.unref();
  });
  try {
    return await Promise.race([
      fn().catch((err: unknown): Probed<T> => ({ status: 'unknown', detail: err instanceof Error ? err.message : String(err) } as Probed<T>)),
      late,
    ]);
  } finally {
    clearTimeout(timer);
  }
}

/** A URL's host and port without user name or password (topology shows where, never credentials). */
export function addressOf(url: string): string {
  if (url.startsWith('sqlite://')) return url.slice('sqlite://'.length);
  try {
    const u = new URL(url);
    return u.port ? `${u.hostname}:${u.port}` : u.hostname;
  } catch {
    return 'unknown';
  }
}
