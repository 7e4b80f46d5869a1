import { AppError } from './errors.js';

const ISO = /^(\d{4})-(\d{2})-(\d{2})(?:T(\d{2}):(\d{2})(?::(\d{2})(?:\.\d{1,9})?)?(Z|[+-](\d{2}):(\d{2})))?$/;

/**
 * An ISO 8601 date or time to epoch milliseconds, or null when it is not one
 * or names a day or time that does not exist: `Date.parse` would move
 * 2030-02-30 to 2 March, and an expiry must never be shifted silently.
 */
export function parseIsoTime(text: string): number | null {
  const m = ISO.exec(text);
  if (!m) return null;
  const [year, month, day, hour, minute, second, offH, offM] = [m[1], m[2], m[3], m[4], m[5], m[6], m[8], m[9]].map((v) => Number(v ?? 0)) as [number, number, number, number, number, number, number, number];
  if (month < 1 || month > 12 || day < 1 || day > new Date(Date.UTC(year, month, 0)).getUTCDate()) return null;
  if (hour > 23 || minute > 59 || second > 59 || offH > 23 || offM > 59) return null;
  const ms = Date.parse(text);
  return Number.isNaN(ms) ? null : ms;
}

/** `parseIsoTime` for a request field: a 422 naming the field when the value is not a real time. */
export function requireIsoTime(field: string, text: string): number {
  const ms = parseIsoTime(text);
  if (ms !== null) return ms;
  const message = 'must be a real ISO 8601 date or time, e.g. 2027-01-31T00:00:00Z';
  throw new AppError('validation', `Invalid ${field}: ${message}`, { errors: [{ path: `body.${field}`, message }] });
}
