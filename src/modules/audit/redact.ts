import type { AuditSummary } from './schema.js';

export const REDACTED = '[redacted]';
export const OMITTED = '[omitted]';

/** Field names whose value is never recorded, whole; a name with one of SECRET_WORDS among its words is treated the same. */
const DENY = new Set(['password', 'secret', 'code', 'token', 'api_key', 'client_secret', 'access_token', 'totp_secret', 'authorization', 'passwd', 'passphrase']);
/**
 * The words of a secret's name, matched as whole words of the field name (split at `_`, `-`, `.` and
 * camelCase): `new_password`, `bearer_token`, `AuthKey` and `totp_code` are secret, while `passwordless`,
 * `passkey_name` or `keyword` are not, since no word of theirs is one of these.
 */
const SECRET_WORDS = new Set(['password', 'passwords', 'passwd', 'pass', 'passphrase', 'secret', 'secrets', 'token', 'tokens', 'key', 'keys', 'apikey', 'code', 'codes', 'otp', 'totp', 'hotp', 'cred', 'creds', 'credential', 'credentials', 'authorization', 'cookie', 'pin', 'private']);
const MAX_STRING = 200;
/** A summary says what changed; it is not a copy of the request (and must fit a TEXT column). */
const MAX_FIELDS = 40;

const words = (name: string): string[] =>
  name
    .replace(/([a-z0-9])([A-Z])/g, '$1_$2')
    .toLowerCase()
    .split(/[^a-z0-9]+/)
    .filter(Boolean);

export const isSecretName = (name: string): boolean => DENY.has(name.toLowerCase()) || words(name).some((w) => SECRET_WORDS.has(w));

/** Credentials written into a URL (`https://user:pw@host`) are cut out. */
const urlCredentials = (s: string): string => s.replace(/(\/\/)[^/@\s]*@/g, `$1${REDACTED}@`);

/**
 * The summary of a change as the audit log keeps it: only the top-level
 * scalar fields (nested values are `[omitted]`, so a secret cannot hide in
 * them), the values of secret names `[redacted]` (booleans excepted), long strings cut, at most
 * MAX_FIELDS fields (then `_more: true`).
 */
export function summarize(...sources: unknown[]): AuditSummary {
  const out: AuditSummary = {};
  for (const src of sources) {
    if (src === null || typeof src !== 'object' || Array.isArray(src)) continue;
    for (const [name, value] of Object.entries(src as Record<string, unknown>)) {
      if (Object.keys(out).length >= MAX_FIELDS) {
        out._more = true;
        break;
      }
      // A boolean is a setting, never a secret (`require_app_password: true` says what changed).
      if (isSecretName(name) && typeof value !== 'boolean') out[name] = REDACTED;
      else if (typeof value === 'string') out[name] = urlCredentials(value.length > MAX_STRING ? `${value.slice(0, MAX_STRING)}…` : value);
      else if (typeof value === 'number' || typeof value === 'boolean' || value === null) out[name] = value;
      else if (value !== undefined) out[name] = OMITTED;
    }
  }
  return out;
}
