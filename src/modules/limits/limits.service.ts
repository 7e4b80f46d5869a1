import { AppError } from '../../shared/errors.js';
import type { Clock } from '../../shared/clock.js';
import { LIMITS, LimitValueError, limitSpec, parseLimitValue } from '../../shared/limit-keys.js';
import type { LimitValues } from '../../shared/limit-keys.js';
import type { LimitRepository } from './limit.repository.js';

/** Told after limits were stored, with the keys whose value changed. */
export type LimitsChanged = (keys: readonly string[]) => Promise<void> | void;

/**
 * The limits in force in this process: each key's stored value, else its
 * default (MAILSVC_<KEY>, else built in). `values()` answers from memory, so
 * the lockout and the send limits can read it on every call; `refresh()`
 * reads the database again (at start, and when another process signals a change).
 */
export class LimitsService {
  private stored: Record<string, number> = {};

  constructor(
    private readonly repo: LimitRepository,
    readonly defaults: LimitValues,
    private readonly clock: Clock,
    private readonly onChanged: LimitsChanged = () => undefined,
  ) {}

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
    for (const [key, text] of Object.entries(rows)) {
      const spec = limitSpec(key);
      if (!spec) continue;
      try {
        stored[key] = parseLimitValue(spec, text);
      } catch {
        // A row this version no longer accepts (a narrower range): the default holds until it is set again.
      }
    }
    this.stored = stored;
    return this.values();
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
