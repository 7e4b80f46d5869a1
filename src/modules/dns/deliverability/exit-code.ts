/** What each deliverability check came to, as the report counts them. */
export type CheckCounts = { pass: number; fail: number; unknown: number };

/**
 * The exit code of `dns check` / `dns report` for cron and monitoring: 1 when
 * a check failed (with `strict`, also when one could not be determined), 69
 * (a server unreachable) when not one check could be determined — "nothing
 * was checked" must never read as healthy — and 0 otherwise.
 */
export function deliverabilityExit(counts: CheckCounts, strict: boolean): number {
  if (counts.fail > 0) return 1;
  if (counts.pass === 0 && counts.unknown > 0) return 69;
  if (strict && counts.unknown > 0) return 1;
  return 0;
}
