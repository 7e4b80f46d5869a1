import type { FastifyInstance, FastifyReply, FastifyRequest, HookHandlerDoneFunction } from 'fastify';

/** Response schemas for the given error statuses, built by http/. */
export type RouteErrors = (...statuses: number[]) => Record<number, unknown>;

/**
 * An admin authentication hook: sets `req.admin` or throws. When it can decide
 * at once (a token the process holds) it calls `done` and returns nothing;
 * otherwise it returns a promise (and never calls `done`). Fastify takes
 * either; a route's own hook may also `await hook.call(app, req, reply)`.
 */
export type AdminHook = (this: FastifyInstance, req: FastifyRequest, reply: FastifyReply, done?: HookHandlerDoneFunction) => Promise<void> | undefined;

/** Admin authentication hooks, built by http/: `setup` is for the /auth/mfa setup paths. */
export type AdminHooks = { admin: AdminHook; setup: AdminHook };

/** Who called an Admin endpoint (set by the admin hooks). */
export type AdminPrincipal = {
  subject: string;
  via: 'bearer' | 'basic' | 'api_key';
  mfaVerified: boolean;
  tokenId: string | null;
  /** When the caller's sign-in happened (ms): an access token's issue time; null for Basic and API keys. */
  authenticatedAt: number | null;
  /** Set when the caller is an API key. */
  apiKey?: { id: string; scopes: ApiKeyScope[] };
};

declare module 'fastify' {
  interface FastifyRequest {
    /** Set by the admin hooks on Admin endpoints. */
    admin?: AdminPrincipal;
    /** The client address: the socket peer, or X-Forwarded-For from a trusted proxy when it is an IP address. */
    clientIp: string;
  }
  interface FastifyContextConfig {
    /** Only login's 429 carries Retry-After (docs/contract.md, Errors). */
    retryAfter?: boolean;
    /**
     * The scope an API key needs for this route when it is not a GET (every GET
     * needs only `read`). A route without one is reached by `admin` keys only.
     */
    scope?: ApiKeyScope;
    /**
     * Once a second factor is enrolled, only an MFA-verified token may call the
     * route: never Basic, a password-only token or an API key.
     */
    mfaVerified?: boolean;
    /**
     * `true`: a destructive action (delete a domain, flush the queue, change
     * the firewall, apply an update): called from the web panel it needs a
     * second factor given within MAILSVC_PANEL_REAUTH_WINDOW.
     * `'every-client'`: an action that changes how the administrator signs in
     * (register or remove a passkey, the passkey policy, disable a factor,
     * create an API key): the panel's rule, and for every client a sign-in at
     * most MAILSVC_REAUTH_WINDOW old or the password and a TOTP code in
     * X-Mailsvc-Reauth (docs/auth.md, Re-authentication).
     */
    reauth?: boolean | 'every-client';
    /** The body may be left out: it is then `{}`, and the OpenAPI document marks it optional. */
    bodyOptional?: boolean;
    /**
     * The audit log records every request other than GET, HEAD and OPTIONS of
     * an authenticated administrator (docs/audit.md). `false`: never (the
     * sign-in steps, whose failures belong in the auth log); `'token-owner'`:
     * whoever sent it, as the owner of the access token in the body or the
     * Authorization header, read before the handler runs (logout).
     */
    audit?: false | 'token-owner';
  }
}

/**
 * Scopes of API keys: `read` reaches every GET; `accounts` the domains,
 * accounts, aliases, app passwords and send limits; `admin` every route an API
 * key may reach. The others are reserved for the coming areas. No key ever
 * reaches /auth/mfa* or /auth/api-keys*.
 */
export const API_KEY_SCOPES = ['read', 'accounts', 'queue', 'bans', 'firewall', 'limits', 'backups', 'dns', 'stats', 'settings', 'admin'] as const;
export type ApiKeyScope = (typeof API_KEY_SCOPES)[number];

/** What the admin hooks pass on about the route, for API keys and the MFA-verified rule. */
export type RouteAccess = { method: string; url: string; scope: ApiKeyScope | undefined; mfaVerified: boolean };

/** The route a request is for, as the admin guard needs it. */
export function routeAccessOf(req: FastifyRequest): RouteAccess {
  const config = req.routeOptions.config;
  return { method: req.method, url: req.routeOptions.url ?? req.url, scope: config.scope, mfaVerified: config.mfaVerified === true };
}

/** OpenAPI security of Admin endpoints: a Bearer token or, where policy allows, Basic. */
export const ADMIN_SECURITY: { [scheme: string]: string[] }[] = [{ bearer: [] }, { basic: [] }];

/** What http/ hands every module's routes: the admin hooks and the error-response schemas. */
export type RouteKit = { hooks: AdminHooks; errors: RouteErrors };

/** A module that serves HTTP routes. */
/** Its routes are loaded when registered, so a CLI command that builds the module never loads them. */
export type HttpModule = { routes(app: FastifyInstance, kit: RouteKit): Promise<void> };
