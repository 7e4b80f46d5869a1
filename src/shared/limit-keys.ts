import { MAX_SEND_RATE, SEND_RATE_WINDOWS, sendRateLimitKey } from './send-rate.js';

/**
 * The limit keys, declared once. Each limit `foo-bar` takes its default from
 * the setting `MAILSVC_FOO_BAR`, is stored when changed at run time, and is
 * rendered to the daemons named in `appliesTo` (`service`: the running
 * mailsvc itself reads it, without a restart).
 */
export type LimitType = 'count' | 'size' | 'duration' | 'score';
export type LimitTarget = 'postfix' | 'rspamd' | 'dovecot' | 'fail2ban' | 'service';

export type LimitSpec = Readonly<{
  key: string;
  type: LimitType;
  /** What the number counts: bytes, seconds, messages, … */
  unit: string;
  min: number;
  max: number;
  /** When set, only these values are accepted. */
  allowed?: readonly number[];
  default: number;
  appliesTo: readonly LimitTarget[];
  description: string;
}>;

/** The fail2ban jails whose thresholds are limits; `nginx` is the nginx-http-auth jail. */
export const FAIL2BAN_JAILS = ['sshd', 'dovecot', 'postfix', 'postfix-sasl', 'nginx', 'mailsvc-auth', 'recidive'] as const;
export type Fail2banJail = (typeof FAIL2BAN_JAILS)[number];
/** The jail section name in fail2ban's configuration. */
export const FAIL2BAN_SECTION: Readonly<Record<Fail2banJail, string>> = {
  sshd: 'sshd', dovecot: 'dovecot', postfix: 'postfix', 'postfix-sasl': 'postfix-sasl', nginx: 'nginx-http-auth', 'mailsvc-auth': 'mailsvc-auth', recidive: 'recidive',
};

const MIB = 1024 * 1024;
const DAY = 86_400;

function jailLimits(jail: Fail2banJail): LimitSpec[] {
  // recidive watches fail2ban's own log for addresses banned again and again: a longer memory and ban.
  const long = jail === 'recidive';
  const base = { appliesTo: ['fail2ban'] as const };
  return [
    { ...base, key: `fail2ban-${jail}-maxretry`, type: 'count', unit: 'failures', min: 1, max: 1000, default: 5, description: `failures before the ${FAIL2BAN_SECTION[jail]} jail bans` },
    { ...base, key: `fail2ban-${jail}-findtime`, type: 'duration', unit: 'seconds', min: 1, max: 30 * DAY, default: long ? DAY : 600, description: `window in which the ${FAIL2BAN_SECTION[jail]} jail counts failures` },
    { ...base, key: `fail2ban-${jail}-bantime`, type: 'duration', unit: 'seconds', min: 1, max: 365 * DAY, default: long ? 7 * DAY : 3600, description: `how long the ${FAIL2BAN_SECTION[jail]} jail bans` },
  ];
}

export const LIMITS: readonly LimitSpec[] = [
  { key: 'message-size-limit', type: 'size', unit: 'bytes', min: 64 * 1024, max: 2048 * MIB, default: 50 * MIB, appliesTo: ['postfix', 'rspamd', 'dovecot'], description: 'largest message accepted' },
  { key: 'smtp-recipient-limit', type: 'count', unit: 'recipients', min: 1, max: 100_000, default: 1000, appliesTo: ['postfix'], description: 'recipients per message' },
  { key: 'postfix-client-connection-rate-limit', type: 'count', unit: 'connections per minute', min: 0, max: 100_000, default: 0, appliesTo: ['postfix'], description: 'SMTP connections per client per minute (0: no limit)' },
  ...SEND_RATE_WINDOWS.map((w): LimitSpec => ({
    key: sendRateLimitKey(w.window), type: 'count', unit: 'messages', min: 0, max: MAX_SEND_RATE, default: 0, appliesTo: ['service'], description: `messages an authenticated sender may send ${w.label} (0: no limit)`,
  })),
  ...FAIL2BAN_JAILS.flatMap(jailLimits),
  { key: 'spam-score-add-header', type: 'score', unit: 'score', min: 0, max: 1000, default: 6, appliesTo: ['rspamd'], description: 'spam score from which a spam header is added' },
  { key: 'spam-score-greylist', type: 'score', unit: 'score', min: 0, max: 1000, default: 4, appliesTo: ['rspamd'], description: 'spam score from which a message is greylisted' },
  { key: 'spam-score-reject', type: 'score', unit: 'score', min: 0, max: 1000, default: 15, appliesTo: ['rspamd'], description: 'spam score from which a message is rejected' },
  { key: 'greylist-delay', type: 'duration', unit: 'seconds', min: 1, max: DAY, default: 300, appliesTo: ['rspamd'], description: 'how long a greylisted sender must wait before retrying' },
  { key: 'greylist-expire', type: 'duration', unit: 'seconds', min: 60, max: 365 * DAY, default: DAY, appliesTo: ['rspamd'], description: 'how long a greylist entry is kept' },
  { key: 'dkim-key-bits', type: 'count', unit: 'bits', min: 2048, max: 4096, allowed: [2048, 3072, 4096], default: 2048, appliesTo: ['service'], description: 'size of new DKIM keys' },
  { key: 'dkim-rotation-days', type: 'count', unit: 'days', min: 1, max: 3650, default: 180, appliesTo: ['service'], description: 'age after which a DKIM key is rotated' },
  { key: 'dkim-rotation-grace-days', type: 'count', unit: 'days', min: 0, max: 365, default: 7, appliesTo: ['service'], description: 'days the old DKIM key stays published after a rotation' },
  { key: 'stats-retention-days', type: 'count', unit: 'days', min: 1, max: 36_500, default: 365, appliesTo: ['service'], description: 'days traffic statistics are kept' },
  { key: 'backup-retention-days', type: 'count', unit: 'days', min: 1, max: 36_500, default: 14, appliesTo: ['service'], description: 'days backups are kept' },
  { key: 'api-auth-fail-limit', type: 'count', unit: 'failures', min: 1, max: 1000, default: 5, appliesTo: ['service'], description: 'API authentication failures per address before the block' },
  { key: 'api-auth-fail-window', type: 'duration', unit: 'seconds', min: 1, max: 7 * DAY, default: 600, appliesTo: ['service'], description: 'window in which API authentication failures are counted' },
  { key: 'api-auth-block-seconds', type: 'duration', unit: 'seconds', min: 1, max: 7 * DAY, default: 900, appliesTo: ['service'], description: 'how long an address is blocked (also sent as Retry-After)' },
];

export const LIMIT_KEYS: readonly string[] = LIMITS.map((l) => l.key);
const BY_KEY = new Map(LIMITS.map((l) => [l.key, l]));
export const limitSpec = (key: string): LimitSpec | undefined => BY_KEY.get(key);

/** Every limit's value, by key. */
export type LimitValues = Readonly<Record<string, number>>;

/** `message-size-limit` → `MAILSVC_MESSAGE_SIZE_LIMIT`. */
export const limitSetting = (key: string): string => `MAILSVC_${key.toUpperCase().replace(/-/g, '_')}`;

const SIZE_SUFFIX: Record<string, number> = { '': 1, K: 1024, M: MIB, G: 1024 * MIB };
const DURATION_SUFFIX: Record<string, number> = { '': 1, s: 1, m: 60, h: 3600, d: DAY, w: 7 * DAY };

/** Why a value is refused; the caller names the key. */
export class LimitValueError extends Error {}

function describeRange(spec: LimitSpec): string {
  if (spec.allowed) return `one of ${spec.allowed.join(', ')}`;
  return `from ${spec.min} to ${spec.max} ${spec.unit}`;
}

function fromText(spec: LimitSpec, text: string): number {
  const t = text.trim();
  if (spec.type === 'score') {
    if (!/^-?\d+(\.\d+)?$/.test(t)) throw new LimitValueError('must be a number such as 6 or 7.5');
    return Number(t);
  }
  if (spec.type === 'size') {
    const m = /^(\d+)\s*([KMG]?)i?B?$/i.exec(t);
    if (!m) throw new LimitValueError('must be bytes, or a number with K, M or G (binary: 50M = 50 MiB)');
    return Number(m[1]) * (SIZE_SUFFIX[(m[2] ?? '').toUpperCase()] ?? 1);
  }
  if (spec.type === 'duration') {
    const m = /^(\d+)\s*([smhdw]?)$/.exec(t);
    if (!m) throw new LimitValueError('must be seconds, or a number with s, m, h, d or w (30s, 10m, 4h, 1d, 1w)');
    return Number(m[1]) * (DURATION_SUFFIX[m[2] ?? ''] ?? 1);
  }
  if (!/^\d+$/.test(t)) throw new LimitValueError('must be a whole number');
  return Number(t);
}

/** The limits rendered into daemon files (the others, `service`, are read by the running service itself). */
export const DAEMON_LIMITS: readonly LimitSpec[] = LIMITS.filter((l) => l.appliesTo.some((t) => t !== 'service'));

/** A value as given (a JSON number, or text with a suffix) → the number stored; throws LimitValueError. */
export function parseLimitValue(spec: LimitSpec, raw: unknown): number {
  let n: number;
  if (typeof raw === 'number') {
    if (!Number.isFinite(raw) || (spec.type !== 'score' && !Number.isInteger(raw))) throw new LimitValueError(spec.type === 'score' ? 'must be a number' : 'must be a whole number');
    n = raw;
  } else if (typeof raw === 'string' && raw.length <= 32) {
    n = fromText(spec, raw);
  } else {
    throw new LimitValueError('must be a number or a short text such as 50M or 10m');
  }
  if (!Number.isSafeInteger(Math.round(n)) || n < spec.min || n > spec.max || (spec.allowed && !spec.allowed.includes(n))) {
    throw new LimitValueError(`must be ${describeRange(spec)}`);
  }
  return n;
}

/** The defaults: each limit's `MAILSVC_FOO_BAR`, else its built-in default. Throws naming the setting. */
export function limitDefaults(src: Readonly<Record<string, string | undefined>>, fail: (setting: string, reason: string) => Error): LimitValues {
  const out: Record<string, number> = {};
  for (const spec of LIMITS) {
    const setting = limitSetting(spec.key);
    const raw = src[setting];
    if (raw === undefined || raw === '') {
      out[spec.key] = spec.default;
      continue;
    }
    try {
      out[spec.key] = parseLimitValue(spec, raw);
    } catch (err) {
      throw fail(setting, err instanceof Error ? err.message : String(err));
    }
  }
  return Object.freeze(out);
}
