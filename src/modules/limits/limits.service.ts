import { AppError } from '../../shared/errors.js';
import type { Clock } from '../../shared/clock.js';
import { LIMITS, LimitValueError, limitSpec, parseLimitValue } from '../../shared/limit-keys.js';
import type { LimitValues } from '../../shared/limit-keys.js';
import type { LimitRepository } from './limit.repository.js';

/** Told after limits were stored, with the keys whose value changed. */
export type LimitsChanged = (keys: readonly string[]) => Promise<void> | void;

/**
 * A stored value this version refuses (an older version accepted it, e.g.
 * dkim-key-bits 1024 before the minimum became 2048): it is not used; the
 * default (MAILSVC_<KEY>, else built in) is in force until it is set again.
 */
export type IgnoredLimit = { key: string; stored: string; reason: string; in_force: number };
/** Told once per process for each stored value that is ignored, with a message that says what to do. */
export type LimitIgnored = (message: string, ignored: IgnoredLimit) => void;

/**
 * The limits in force in this process: each key's stored value, else its
 * default (MAILSVC_<KEY>, else built in). `values()` answers from memory, so
 * the lockout and the send limits can read it on every call; `refresh()`
 * reads the database again (at start, and when another process signals a change).
 */
export class LimitsService {
  private stored: Record<string, number> = {};
  private ignoredRows: IgnoredLimit[] = [];
  private readonly told = new Set<string>();

  constructor(
    private readonly repo: LimitRepository,
    readonly defaults: LimitValues,
    private readonly clock: Clock,
    private readonly onChanged: LimitsChanged = () => undefined,
    private readonly onIgnored: LimitIgnored = () => undefined,
  ) {}

  /** The stored values the last refresh did not use, each with the value in force instead. */
  ignored(): readonly IgnoredLimit[] {
    return this.ignoredRows;
  }

  values(): LimitValues {
    return Object.fromEntries(LIMITS.map((l) => [l.key, this.stored[l.key] ?? this.defaults[l.key] ?? l.default]));
  }

  value(key: string): number {
    const spec = limitSpec(key);
    if (!spec) throw new Error(`no limit key ${key}`);
    return this.stored[key] ?? this.defaults[key] ?? spec.default;
  }

  async refresh(): Promise<LimitValues> {
    const rows = await this.repo.all();
    const stored: Record<string, number> = {};
    const refused: Omit<IgnoredLimit, 'in_force'>[] = [];
    for (const [key, text] of Object.entries(rows)) {
      const spec = limitSpec(key);
      if (!spec) continue;
      try {
        stored[key] = parseLimitValue(spec, text);
      } catch (err) {
        // A row this version no longer accepts (a narrower range): the default holds until it is set again, and the administrator is told.
        refused.push({ key, stored: text, reason: err instanceof LimitValueError ? err.message : 'is not valid' });
      }
    }
    this.stored = stored;
    const values = this.values();
    this.ignoredRows = refused.map((r) => ({ ...r, in_force: values[r.key] ?? 0 }));
    for (const r of this.ignoredRows) {
      if (this.told.has(`${r.key}=${r.stored}`)) continue;
      this.told.add(`${r.key}=${r.stored}`);
      this.onIgnored(ignoredMessage(r), r);
    }
    return values;
  }

  /** Validates every entry first; one unknown key or bad value refuses the whole change (422 naming the key). */
  async update(patch: Readonly<Record<string, unknown>>): Promise<LimitValues> {
    const parsed: Record<string, number> = {};
    for (const [key, raw] of Object.entries(patch)) {
      const spec = limitSpec(key);
      if (!spec) throw new AppError('validation', `Unknown limit key "${key.slice(0, 80)}"`, { errors: [{ path: `body.${key.slice(0, 80)}`, message: 'is not a limit key' }] });
      try {
        parsed[key] = parseLimitValue(spec, raw);
      } catch (err) {
        const reason = err instanceof LimitValueError ? err.message : 'is not valid';
        throw new AppError('validation', `${key} ${reason}`, { errors: [{ path: `body.${key}`, message: reason }] });
      }
    }
    const before = await this.refresh();
    if (Object.keys(parsed).length > 0) await this.repo.setMany(parsed, this.clock.now());
    const after = await this.refresh();
    const differs = Object.keys(parsed).filter((k) => before[k] !== after[k]);
    if (differs.length > 0) await this.onChanged(differs);
    return after;
  }
}

/** What `limits show`, the log and the start say about a stored value that is ignored. */
export const ignoredMessage = (r: IgnoredLimit): string =>
  `the stored limit ${r.key} = ${r.stored} is no longer accepted (${r.reason}): ${r.in_force} is used instead; store a valid value with mailsvc limits set ${r.key} <value> (or PATCH /admin/limits)`;
