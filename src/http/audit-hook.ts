import type { FastifyError, FastifyInstance, FastifyRequest } from 'fastify';
import { AppError } from '../shared/errors.js';
import type { AuditService } from '../modules/audit/index.js';
import { isSecretName, REDACTED, summarize } from '../modules/audit/index.js';

/** Who a token passed to logout belongs to (null: not a live token). */
export type TokenOwner = (token: string) => Promise<{ subject: string; tokenId: string } | null>;

const READ_ONLY = new Set(['GET', 'HEAD', 'OPTIONS']);
/** Body fields that name what a create acts on, when the URL has no parameter. */
/** The body fields that name what a request acts on, when its path names nothing (`ip`: the address a ban is for). */
const TARGET_FIELDS = ['address', 'name', 'source', 'domain', 'ip'];

const STATUS_CODES: Record<number, string> = {
  400: 'bad_request', 401: 'unauthenticated', 403: 'forbidden', 404: 'not_found', 409: 'conflict', 413: 'too_large',
  415: 'unsupported_media_type', 422: 'validation', 429: 'rate_limited', 502: 'upstream', 503: 'unavailable',
};

function errorCode(err: FastifyError | Error): string {
  if (err instanceof AppError) return err.code;
  const fe = err as FastifyError;
  if (fe.validation) return 'validation';
  return typeof fe.statusCode === 'number' && fe.statusCode < 500 ? (STATUS_CODES[fe.statusCode] ?? `http_${fe.statusCode}`) : 'internal';
}

function targetOf(params: unknown, body: unknown): string | null {
  const p = params !== null && typeof params === 'object' ? Object.entries(params as Record<string, unknown>) : [];
  if (p.length > 0) return p.map(([k, v]) => (isSecretName(k) ? REDACTED : String(v))).join('/');
  if (body !== null && typeof body === 'object') {
    for (const f of TARGET_FIELDS) {
      const v = (body as Record<string, unknown>)[f];
      if (typeof v === 'string') return v;
    }
  }
  return null;
}

/**
 * Whether the audit log records the requests of a route: every method but
 * GET, HEAD and OPTIONS, unless the route says `config: { audit: false }`.
 * (Only an authenticated administrator's requests, or a `token-owner`
 * route's, are then written: the others are failed sign-ins.)
 */
export function isAuditedRoute(route: { method: string | string[]; config?: { audit?: false | 'token-owner' } }): boolean {
  const methods = Array.isArray(route.method) ? route.method : [route.method];
  return !methods.every((m) => READ_ONLY.has(m)) && route.config?.audit !== false;
}

/** A route option that holds no hook, one, or a list. */
function hookList(h: unknown): unknown[] {
  return h === undefined ? [] : Array.isArray(h) ? h : [h];
}

/**
 * Records every state-changing request of an authenticated administrator
 * (and logout) once its answer has gone out: who, from where, what, and the
 * result. Recording after the response means an audit failure can never turn
 * a done change into an error; the service logs such a failure.
 */
export function registerAuditHook(app: FastifyInstance, audit: AuditService, tokenOwner: TokenOwner): void {
  const errors = new WeakMap<FastifyRequest, string>();
  const tokenOwners = new WeakMap<FastifyRequest, { subject: string; tokenId: string } | null>();
  const key = (req: FastifyRequest): string => `${req.method} ${req.routeOptions.url ?? ''}`;

  const onError = async (req: FastifyRequest, _reply: unknown, err: FastifyError | Error): Promise<void> => {
    errors.set(req, errorCode(err));
  };
  // Logout revokes its token: read whose it is before the handler does.
  const readTokenOwner = async (req: FastifyRequest): Promise<void> => {
    const body = req.body as { access_token?: string } | undefined;
    const token = body?.access_token ?? /^bearer\s+(.+)$/i.exec(req.headers.authorization ?? '')?.[1]?.trim();
    tokenOwners.set(req, token ? await tokenOwner(token).catch(() => null) : null);
  };
  const onResponse = async (req: FastifyRequest, reply: { statusCode: number }): Promise<void> => {
    const action = key(req);
    const byTokenOwner = req.routeOptions.config.audit === 'token-owner';
    const who = byTokenOwner ? (tokenOwners.get(req) ?? null) : req.admin ? { subject: req.admin.subject, tokenId: req.admin.tokenId } : undefined;
    // Requests that never authenticated are failed sign-ins: the auth log has them.
    if (who === undefined) return;
    const status = reply.statusCode;
    const result = status < 400 ? 'ok' : (errors.get(req) ?? STATUS_CODES[status] ?? `http_${status}`);
    await audit.record({
      actor: who?.subject ?? 'unknown',
      tokenId: who?.tokenId ?? null,
      source: req.clientIp,
      action,
      target: targetOf(req.params, req.body),
      summary: summarize(req.query, req.body),
      result,
    });
  };
  // The hooks go on the state-changing routes only, as each is declared: a read pays for none of them.
  app.addHook('onRoute', (route) => {
    if (!isAuditedRoute(route)) return;
    route.onError = [...hookList(route.onError), onError] as typeof route.onError;
    route.onResponse = [...hookList(route.onResponse), onResponse] as typeof route.onResponse;
    if (route.config?.audit === 'token-owner') route.preHandler = [...hookList(route.preHandler), readTokenOwner] as typeof route.preHandler;
  });
}
