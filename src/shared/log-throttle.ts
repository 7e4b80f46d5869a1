/**
 * At most one log line per key per interval, for events a hostile peer can
 * repeat as fast as it likes (refused connections, protocol violations): the
 * first is logged at once, later ones are counted and reported with the next.
 */
export class LogThrottle {
  private readonly last = new Map<string, { at: number; suppressed: number }>();

  constructor(private readonly intervalMs: number, private readonly now: () => number = Date.now) {}

  /** The number of events held back since the last line, or null when this one is held back too. */
  admit(key: string): number | null {
    const t = this.now();
    const entry = this.last.get(key);
    if (entry && t - entry.at < this.intervalMs) {
      entry.suppressed++;
      return null;
    }
    const suppressed = entry?.suppressed ?? 0;
    if (this.last.size >= 1000 && !entry) this.last.clear();
    this.last.set(key, { at: t, suppressed: 0 });
    return suppressed;
  }
}
