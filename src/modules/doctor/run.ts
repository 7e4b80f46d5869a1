import type { CheckStatus, DoctorCheck, DoctorReport } from './schema.js';

/** What a check finds. `fix` is what to do (null when ok). */
export type Finding = { status: CheckStatus; detail: string; fix: string | null };

/**
 * A check: one line, or a group that gives several lines from one probe (the
 * daemons, asked through the report's probes all at once). `lines` names the
 * group's lines for the answer when it does not finish in time.
 */
export type Check =
  | { id: string; name: string; run: () => Promise<Finding> }
  | { group: string; lines: ReadonlyArray<{ id: string; name: string }>; run: () => Promise<DoctorCheck[]> };

const message = (err: unknown): string => (err instanceof Error ? err.message : String(err)).split('\n')[0]?.slice(0, 300) ?? '';

/** `p`, or the answer of `late()` when it has not settled within `ms`. */
async function within<T>(ms: number, p: Promise<T>, late: () => T): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const slow = new Promise<T>((resolve) => {
    timer = setTimeout(() => resolve(late()), ms);
    timer.unref();
  });
  try {
    return await Promise.race([p, slow]);
  } finally {
    clearTimeout(timer);
  }
}

const tooSlow = (ms: number): Finding => ({ status: 'unknown', detail: `no answer within ${ms} ms`, fix: 'run mailsvc doctor again; if it stays, look at what this check asks (docs/doctor.md)' });
const couldNot = (err: unknown): Finding => ({ status: 'unknown', detail: `could not be checked: ${message(err)}`, fix: 'see docs/doctor.md for what this check needs' });

/** Every check at once, each within `ms`; a check that throws or hangs is `unknown`, never a failed doctor. */
export async function runChecks(checks: readonly Check[], ms: number): Promise<DoctorCheck[]> {
  const lines = await Promise.all(
    checks.map((c): Promise<DoctorCheck[]> => {
      if ('group' in c) {
        const fallback = (f: Finding) => c.lines.map((l) => ({ ...l, ...f }));
        return within(ms, c.run().catch((err: unknown) => fallback(couldNot(err))), () => fallback(tooSlow(ms)));
      }
      const one = c.run().catch(couldNot);
      return within(ms, one, () => tooSlow(ms)).then((f) => [{ id: c.id, name: c.name, ...f }]);
    }),
  );
  return lines.flat();
}

const plural = (n: number, one: string, many: string): string => `${n} ${n === 1 ? one : many}`;

/** The answer: counts, the status and its one-line summary. Exit code: see `exitCode`. */
export function report(checks: DoctorCheck[], now: number): DoctorReport {
  const counts = { ok: 0, warn: 0, fail: 0, unknown: 0 };
  for (const c of checks) counts[c.status] += 1;
  const nothing = checks.length === counts.unknown;
  const attention = counts.fail + counts.warn > 0;
  return {
    generated_at: new Date(now).toISOString(),
    status: nothing ? 'unknown' : attention ? 'needs_attention' : 'ok',
    summary: nothing
      ? 'nothing could be checked'
      : attention
        ? `needs attention: ${plural(counts.fail, 'failing', 'failing')}, ${plural(counts.warn, 'warning', 'warnings')}`
        : 'ok',
    counts,
    checks,
  };
}

/** 0: all ok (warnings allowed); 1: a check fails; 69: nothing could be checked. */
export function exitCode(r: DoctorReport): number {
  if (r.status === 'unknown') return 69;
  return r.counts.fail > 0 ? 1 : 0;
}
