import type { FastifyInstance, onRequestAsyncHookHandler } from 'fastify';

/** Response schemas for the given error statuses, built by http/. */
export type RouteErrors = (...statuses: number[]) => Record<number, unknown>;

/** Admin authentication hooks, built by http/: `setup` is for the /auth/mfa setup paths. */
export type AdminHooks = { admin: onRequestAsyncHookHandler; setup: onRequestAsyncHookHandler };

/** Who called an Admin endpoint (set by the admin hooks). */
export type AdminPrincipal = { subject: string; via: 'bearer' | 'basic'; mfaVerified: boolean; tokenId: string | null };

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

/** What http/ hands every module's routes: the admin hooks and the error-response schemas. */
export type RouteKit = { hooks: AdminHooks; errors: RouteErrors };

/** A module that serves HTTP routes. */
/** Its routes are loaded when registered, so a CLI command that builds the module never loads them. */
export type HttpModule = { routes(app: FastifyInstance, kit: RouteKit): Promise<void> };
