/**
 * Stable error codes. Services throw AppError with one of these; only http/
 * maps a code to a status and only cli/ maps it to an exit code.
 */
export type ErrorCode =
  | 'bad_request'
  | 'validation'
  | 'unauthenticated'
  | 'bearer_required'
  /** The caller is who it says, but this action needs a fresh sign-in: 403 with X-Mailsvc-Reauth: required. */
  | 'reauth_required'
  | 'forbidden'
  | 'not_found'
  | 'conflict'
  | 'rate_limited'
  | 'upstream'
  | 'unavailable'
  | 'internal';

/** Set on every 403 of an action that needs a fresh sign-in (code reauth_required; docs/auth.md, Re-authentication). */
export const REAUTH_HEADER = 'x-mailsvc-reauth';

export class AppError extends Error {
  constructor(
    readonly code: ErrorCode,
    readonly detail: string,
    readonly extra: { retryAfter?: number; errors?: { path: string; message: string }[]; bearerOnly?: boolean } = {},
  ) {
    super(detail);
    this.name = 'AppError';
  }
}

export const badRequest = (detail: string): AppError => new AppError('bad_request', detail);
export const unauthenticated = (detail: string): AppError => new AppError('unauthenticated', detail);

/** A query parameter the route's schema lets through but the service refuses: 422 naming `querystring.<field>`. */
export const queryError = (field: string, message: string): AppError => new AppError('validation', `${field}: ${message}`, { errors: [{ path: `querystring.${field}`, message }] });
