import type { AuditSummary } from './schema.js';

export const REDACTED = '[redacted]';
export const OMITTED = '[omitted]';

/** Field names whose value is never recorded; anything matching SECRET_NAME is treated the same. */
const DENY = new Set(['password', 'secret', 'code', 'token', 'api_key', 'client_secret', 'access_token', 'totp_secret', 'authorization']);
const SECRET_NAME = /pass|secret|token|key|code|otp|cred/i;
const MAX_STRING = 200;
/** A summary says what changed; it is not a copy of the request (and must fit a TEXT column). */
const MAX_FIELDS = 40;

export const isSecretName = (name: string): boolean => DENY.has(name.toLowerCase()) || SECRET_NAME.test(name);

/** Credentials written into a URL (`https://user:pw@host`) are cut out. */
const urlCredentials = (s: string): string => s.replace(/(\/\/)[^/@\s]*@/g, `$1${REDACTED}@`);

/**
 * The summary of a change as the audit log keeps it: only the top-level
 * scalar fields (nested values are `[omitted]`, so a secret cannot hide in
 * them), secret-looking names `[redacted]`, long strings cut, at most
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
      if (isSecretName(name)) out[name] = REDACTED;
      else if (typeof value === 'string') out[name] = urlCredentials(value.length > MAX_STRING ? `${value.slice(0, MAX_STRING)}…` : value);
      else if (typeof value === 'number' || typeof value === 'boolean' || value === null) out[name] = value;
      else if (value !== undefined) out[name] = OMITTED;
    }
  }
  return out;
}
