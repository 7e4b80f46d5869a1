import type { DeliverabilityReport } from './schema.js';

/**
 * A saved report as stored. Reports saved before checks could warn have no
 * `warn` count: it is 0 there (none of their checks warned).
 */
export function savedReport(json: string): DeliverabilityReport {
  const r = JSON.parse(json) as DeliverabilityReport;
  return { ...r, counts: { ...r.counts, warn: r.counts.warn ?? 0 } };
}
