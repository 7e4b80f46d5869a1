import type { FastifyInstance, preValidationAsyncHookHandler } from 'fastify';
import type { FastifyDynamicSwaggerOptions } from '@fastify/swagger';
import { Type } from '@sinclair/typebox';
import type { AdminHooks } from '../modules/route-types.js';
import { ADMIN_SECURITY } from '../modules/route-types.js';
import { SERVICE_VERSION } from '../shared/version.js';
import { REAUTH_HEADER } from '../shared/errors.js';

/** What each error status means, as the OpenAPI document says it. */
const ERROR_TEXT: Record<number, string> = {
  400: 'Bad request: malformed JSON or URL, or a value the service cannot use',
  401: 'No, bad, expired or revoked credentials; Basic once a second factor is enrolled',
  403: 'Authenticated but not allowed: API-key scope, or a second factor must be enrolled first',
  404: 'Not found',
  408: 'The request was not received in time',
  409: 'Conflicts with the current state',
  413: 'Body over 1 MiB',
  415: 'Body is not application/json',
  422: 'The request breaks the schema; `errors` names each field (an unknown field included)',
  429: 'Too many authentication attempts from this address',
  431: 'URL and headers too large',
  502: 'An upstream service (SMS provider) failed',
  503: 'The state store (Redis), or a daemon the operation needs (the helper, Postfix, fail2ban, nftables…), is absent or unreachable: the detail says what to install or start; retry after Retry-After seconds',
};

type RouteSchema = {
  operationId?: string;
  security?: unknown;
  body?: unknown;
  params?: unknown;
  querystring?: unknown;
  response?: Record<string | number, unknown>;
  hide?: boolean;
  description?: string;
  headers?: unknown;
};
type SwaggerRoute = { method: string | string[]; url: string; onRequest?: unknown; config?: { bodyOptional?: boolean; reauth?: boolean | 'every-client' } };

/** `POST /accounts/:id/app-passwords` → `postAccountsByIdAppPasswords`: unique per method and path. */
export function operationIdOf(method: string, url: string): string {
  const words = url
    .split('/')
    .filter(Boolean)
    .flatMap((seg) => (seg.startsWith(':') ? ['by', seg.slice(1)] : seg.split(/[^A-Za-z0-9]+/)))
    .filter(Boolean);
  return method.toLowerCase() + words.map((w) => w[0]!.toUpperCase() + w.slice(1)).join('');
}

/** What every route marked `reauth: 'every-client'` adds to its description (docs/auth.md, Re-authentication). */
const REAUTH_TEXT =
  'Needs a recent sign-in, whatever the client: an access token issued at most MAILSVC_REAUTH_WINDOW seconds ago (with the second factor once one is enrolled), or the password and a current TOTP code in X-Mailsvc-Reauth. Otherwise 403 with X-Mailsvc-Reauth: required; a wrong proof counts in the lockout.';

function isAdminRoute(route: SwaggerRoute, hooks: AdminHooks): boolean {
  const list = Array.isArray(route.onRequest) ? (route.onRequest as unknown[]) : [route.onRequest];
  return list.some((h) => h === hooks.admin || h === hooks.setup);
}

/**
 * The one place that completes every operation of the OpenAPI document, so a
 * route added later cannot miss it: an operationId (unless the route sets one),
 * `security` (Bearer or Basic on routes behind the admin hooks, none on public
 * ones), and the error statuses the service answers for reasons outside the
 * route (authentication, the body, the state store, the HTTP parser). A route
 * writes its own summary, description and the statuses of its own rules.
 */
export function completeOperation(hooks: AdminHooks) {
  return ({ schema, url, route }: { schema: unknown; url: string; route: SwaggerRoute }): { schema: RouteSchema; url: string } => {
    const s: RouteSchema = { ...(schema as RouteSchema) };
    if (s.hide) return { schema: s, url };
    const method = Array.isArray(route.method) ? (route.method[0] ?? 'GET') : route.method;
    const admin = isAdminRoute(route, hooks);
    const statuses = [408, 431];
    if (admin) statuses.push(401, 403, 429, 503);
    else if (url.startsWith('/auth/')) statuses.push(503);
    if (s.body !== undefined) statuses.push(400, 413, 415, 422);
    if (s.params !== undefined || s.querystring !== undefined) statuses.push(422);
    const response: Record<string | number, unknown> = { ...(s.response ?? {}) };
    for (const [status, r] of Object.entries(response)) {
      const text = ERROR_TEXT[Number(status)];
      if (text !== undefined && typeof r === 'object' && r !== null && !('description' in r)) response[status] = { ...r, description: text };
    }
    for (const status of statuses) response[status] ??= { ...Type.Ref('ErrorBody'), description: ERROR_TEXT[status] };
    s.response = response;
    if (route.config?.reauth === 'every-client') {
      s.description = `${s.description ?? ''} ${REAUTH_TEXT}`.trim();
      s.headers = Type.Object({ [REAUTH_HEADER]: Type.Optional(Type.String({ maxLength: 2048, description: 'base64 of `<password>:<TOTP code>` (the code empty while no factor is enrolled): re-authentication in this request' })) });
    }
    s.operationId ??= operationIdOf(method, url);
    s.security ??= admin ? ADMIN_SECURITY : [];
    return { schema: s, url };
  };
}

type OpenApiDoc = { paths?: Record<string, Record<string, { requestBody?: { required?: boolean } }>> };

/** The swagger options: the document's head, the transform above, and optional bodies marked as such. */
export function swaggerOptions(app: FastifyInstance, hooks: AdminHooks): FastifyDynamicSwaggerOptions {
  const optionalBodies = new Set<string>();
  app.addHook('onRoute', (route) => {
    if (route.config?.bodyOptional === true) for (const m of [route.method].flat()) optionalBodies.add(`${m.toLowerCase()} ${route.url}`);
  });
  const transform = completeOperation(hooks);
  return {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'mailsvc management API',
        version: SERVICE_VERSION,
        description: 'Administration of a self-hosted mail server: sign-in with a second factor, domains, mailboxes, aliases, app passwords, API keys, audit and jobs. Every error body is `{"detail"}`.',
        license: { name: 'AGPL-3.0-only', identifier: 'AGPL-3.0-only' },
      },
      servers: [{ url: '/', description: 'this service' }],
      components: {
        securitySchemes: {
          bearer: { type: 'http', scheme: 'bearer', description: 'An access token from /auth/login (and /auth/mfa/verify), or an API key' },
          basic: { type: 'http', scheme: 'basic', description: 'The administrator password; refused once a second factor is enrolled' },
        },
      },
    },
    transform: transform as unknown as FastifyDynamicSwaggerOptions['transform'],
    transformObject: (documentObject) => {
      const openapiObject = 'openapiObject' in documentObject ? documentObject.openapiObject : documentObject.swaggerObject;
      const doc = openapiObject as OpenApiDoc;
      for (const [path, methods] of Object.entries(doc.paths ?? {})) {
        for (const [verb, op] of Object.entries(methods)) {
          const url = path.replace(/\{([^}]+)\}/g, ':$1');
          if (op.requestBody && optionalBodies.has(`${verb} ${url}`)) op.requestBody.required = false;
        }
      }
      return openapiObject;
    },
    refResolver: { buildLocalReference: (json, _base, _frag, i) => (typeof json.$id === 'string' ? json.$id : `def-${i}`) },
  };
}

/** A route with `config: { bodyOptional: true }` takes a missing body as `{}` (its own hook: no cost elsewhere). */
export function registerOptionalBodies(app: FastifyInstance): void {
  const fill: preValidationAsyncHookHandler = async (req) => {
    req.body ??= {};
  };
  app.addHook('onRoute', (route) => {
    if (route.config?.bodyOptional !== true) return;
    const own = route.preValidation === undefined ? [] : [route.preValidation].flat();
    route.preValidation = [fill, ...own];
  });
}
