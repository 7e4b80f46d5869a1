/**
 * The send-rate windows, declared once. Account columns (`send_rate_<window>`),
 * settings (`MAILSVC_SEND_RATE_<WINDOW>`), limit keys (`send-rate-<window>`),
 * schemas, CLI flags and the policy service's answer all derive from this list.
 */
export const SEND_RATE_WINDOWS = [
  { window: 'burst', seconds: 10, label: 'in 10 seconds' },
  { window: 'per_minute', seconds: 60, label: 'per minute' },
  { window: 'per_hour', seconds: 3600, label: 'per hour' },
  { window: 'per_day', seconds: 86_400, label: 'per day' },
  { window: 'per_week', seconds: 604_800, label: 'per week' },
  { window: 'per_month', seconds: 2_592_000, label: 'per month' },
] as const;

export type Window = (typeof SEND_RATE_WINDOWS)[number]['window'];
/** Messages allowed per window; 0 = no limit. */
export type Limits = Record<Window, number>;
export type SendRateField = `send_rate_${Window}`;

export const WINDOWS: readonly Window[] = SEND_RATE_WINDOWS.map((w) => w.window);
export const WINDOW_SECONDS = Object.fromEntries(SEND_RATE_WINDOWS.map((w) => [w.window, w.seconds])) as Record<Window, number>;
export const WINDOW_LABEL = Object.fromEntries(SEND_RATE_WINDOWS.map((w) => [w.window, w.label])) as Record<Window, string>;

export const sendRateField = (w: Window): SendRateField => `send_rate_${w}`;
export const SEND_RATE_FIELDS: readonly SendRateField[] = WINDOWS.map(sendRateField);
/** `per_minute` → `MAILSVC_SEND_RATE_PER_MINUTE`. */
export const sendRateSetting = (w: Window): string => `MAILSVC_SEND_RATE_${w.toUpperCase()}`;
/** `per_minute` → `send-rate-per-minute`, the limit key. */
export const sendRateLimitKey = (w: Window): string => `send-rate-${w.replace(/_/g, '-')}`;

/** Whole numbers per window: an account's own value, 0 meaning "inherit". */
export const MAX_SEND_RATE = 1_000_000;

/** An account's own values over the defaults: 0 on the account inherits. */
export function effectiveLimits(own: Record<SendRateField, number>, defaults: Limits): Limits {
  return Object.fromEntries(WINDOWS.map((w) => [w, own[sendRateField(w)] > 0 ? own[sendRateField(w)] : defaults[w]])) as Limits;
}
