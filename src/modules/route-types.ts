import type { onRequestAsyncHookHandler } from 'fastify';

/** Response schemas for the given error statuses, built by http/. */
export type RouteErrors = (...statuses: number[]) => Record<number, unknown>;

/** Admin authentication hooks, built by http/: `setup` is for the /auth/mfa setup paths. */
export type AdminHooks = { admin: onRequestAsyncHookHandler; setup: onRequestAsyncHookHandler };

import type { AdminPrincipal } from './auth/admin-guard.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** Set by the admin hooks on Admin endpoints. */
    admin?: AdminPrincipal;
    /** The client address: the socket peer, or X-Forwarded-For from a trusted proxy when it is an IP address. */
    clientIp: string;
  }
  interface FastifyContextConfig {
    /** Only login's 429 carries Retry-After (spec §Errors). */
    retryAfter?: boolean;
  }
}

/** OpenAPI security of Admin endpoints: a Bearer token or, where policy allows, Basic. */
export const ADMIN_SECURITY: { [scheme: string]: string[] }[] = [{ bearer: [] }, { basic: [] }];
