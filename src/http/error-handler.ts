import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { AppError, REAUTH_HEADER } from '../shared/errors.js';
import type { ErrorCode } from '../shared/errors.js';
import { isRedisUnavailable } from '../adapters/redis/redis-client.js';

/** Seconds a client is asked to wait when Redis is out of reach (the client reconnects every 2 s at most). */
export const UNAVAILABLE_RETRY_AFTER = 5;

const STATUS: Record<ErrorCode, number> = {
  bad_request: 400,
  validation: 422,
  unauthenticated: 401,
  bearer_required: 401,
  reauth_required: 403,
  forbidden: 403,
  not_found: 404,
  conflict: 409,
  rate_limited: 429,
  upstream: 502,
  unavailable: 503,
  internal: 500,
};

export const WWW_AUTHENTICATE = 'Bearer realm="mailsvc", Basic realm="mailsvc", charset="UTF-8"';
/** Once a second factor is enrolled Basic is refused, so it is no longer offered. */
export const WWW_AUTHENTICATE_BEARER = 'Bearer realm="mailsvc"';

const FASTIFY_CODES: Record<string, [number, string]> = {
  FST_ERR_CTP_BODY_TOO_LARGE: [413, 'Request body too large: the limit is 1 MiB'],
  FST_ERR_CTP_INVALID_MEDIA_TYPE: [415, 'Unsupported content type: send application/json'],
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: [400, 'Content-Length does not match the body'],
  FST_ERR_CTP_INVALID_JSON_BODY: [400, 'Malformed JSON body'],
  FST_ERR_CTP_EMPTY_JSON_BODY: [400, 'Malformed JSON body'],
};

type Validation = { keyword?: string; instancePath?: string; message?: string; params?: Record<string, unknown> };

/**
 * A union of literals (an enum) fails in ajv as one "must be equal to
 * constant" per allowed value plus "must match a schema in anyOf": those
 * become one error that names the allowed values once.
 */
function foldEnums(list: Validation[]): Validation[] {
  const allowed = new Map<string, unknown[]>();
  for (const v of list) if (v.keyword === 'const') allowed.set(v.instancePath ?? '', [...(allowed.get(v.instancePath ?? '') ?? []), v.params?.allowedValue]);
  const out: Validation[] = [];
  for (const v of list) {
    const values = allowed.get(v.instancePath ?? '');
    if (!values) out.push(v);
    else if (v.keyword === 'anyOf') out.push({ ...v, keyword: 'enum', message: `must be one of ${values.map((x) => (typeof x === 'string' ? x : JSON.stringify(x))).join(', ')}` });
    else if (v.keyword !== 'const') out.push(v);
  }
  return out;
}

function validationErrors(list: Validation[], context: string | undefined): { path: string; message: string }[] {
  return foldEnums(list).map((v) => {
    const missing = typeof v.params?.missingProperty === 'string' ? `/${v.params.missingProperty}` : '';
    const unknown = typeof v.params?.additionalProperty === 'string' ? `/${v.params.additionalProperty}` : '';
    const path = `${context ?? 'body'}${v.instancePath ?? ''}${missing}${unknown}`.replace(/\//g, '.');
    return { path, message: unknown ? 'is not a known field' : (v.message ?? 'is invalid') };
  });
}

/**
 * Maps errors to statuses and bodies. Messages of 5xx are never shown: the
 * client gets a fixed text and the log gets the error.
 */
export function errorHandler(error: FastifyError | AppError | Error, request: FastifyRequest, reply: FastifyReply): FastifyReply {
  if (isRedisUnavailable(error)) {
    // Lockout, challenges and revocations live there: without it nothing is let through.
    error = new AppError('unavailable', 'Service temporarily unavailable: its state store (Redis) cannot be reached', { retryAfter: UNAVAILABLE_RETRY_AFTER });
  }
  if (error instanceof AppError) {
    const status = STATUS[error.code];
    // The one signal a client (the panel included) acts on: sign in again, or send the proof, and repeat.
    if (error.code === 'reauth_required') reply.header(REAUTH_HEADER, 'required');
    if (status === 401) reply.header('www-authenticate', error.extra.bearerOnly === true ? WWW_AUTHENTICATE_BEARER : WWW_AUTHENTICATE);
    // Among the auth errors only login's 429 carries Retry-After; a 503 (a daemon or store absent) always does.
    if (status === 429 && request.routeOptions.config.retryAfter === true && error.extra.retryAfter !== undefined) reply.header('retry-after', String(error.extra.retryAfter));
    if (status === 503) reply.header('retry-after', String(error.extra.retryAfter ?? UNAVAILABLE_RETRY_AFTER));
    if (status === 503) request.log.warn({ reqId: request.id, code: error.code }, error.detail);
    else if (status >= 500) request.log.error({ reqId: request.id, code: error.code }, error.detail);
    const body: { detail: string; errors?: { path: string; message: string }[] } = {
      detail: status === 500 ? 'Internal server error' : error.detail,
    };
    if (error.extra.errors) body.errors = error.extra.errors;
    return reply.status(status).send(body);
  }
  const fe = error as FastifyError;
  if (fe.validation) {
    const errors = validationErrors(fe.validation as Validation[], fe.validationContext);
    const first = errors[0];
    return reply.status(422).send({ detail: first ? `Invalid request: ${first.path} ${first.message}` : 'Invalid request', errors });
  }
  const known = fe.code ? FASTIFY_CODES[fe.code] : undefined;
  if (known) return reply.status(known[0]).send({ detail: known[1] });
  if (typeof fe.statusCode === 'number' && fe.statusCode >= 400 && fe.statusCode < 500) {
    return reply.status(fe.statusCode).send({ detail: fe.message });
  }
  request.log.error({ reqId: request.id, err: error }, 'unhandled error');
  return reply.status(500).send({ detail: 'Internal server error' });
}
