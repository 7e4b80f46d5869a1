import type { FastifyInstance, RouteOptions } from 'fastify';
import type { AdminHooks, ApiKeyScope } from '../modules/route-types.js';
import { isAuditedRoute } from './audit-hook.js';

/** One route as the service registers it: what the generated docs and the contract test read. */
export type RouteEntry = {
  method: string;
  /** Fastify's form, `/domains/:domain`. */
  url: string;
  /** The module whose `routes` registered it (null: http/'s own, `/openapi.json`, `/docs`). */
  module: string | null;
  summary: string | undefined;
  /** Left out of the OpenAPI document (`schema: { hide: true }`). */
  hidden: boolean;
  /** none: public; admin: behind the admin hooks; setup: the admin hooks of the /auth/mfa setup paths. */
  access: 'none' | 'admin' | 'setup';
  scope: ApiKeyScope | undefined;
  mfaVerified: boolean;
  /** Its requests are recorded in the audit log. */
  audited: boolean;
};

type Schema = { hide?: boolean; summary?: string; security?: unknown[] };

/**
 * Collects every route into `into` as it is registered, with the module that
 * registers it (`current()`): nothing is kept unless a caller asks (the docs
 * generator, the contract test).
 */
export function collectRoutes(app: FastifyInstance, hooks: AdminHooks, into: RouteEntry[], current: () => string | null): void {
  app.addHook('onRoute', (route: RouteOptions) => {
    const schema = (route.schema ?? {}) as Schema;
    const onRequest = [route.onRequest ?? []].flat() as unknown[];
    const access = onRequest.includes(hooks.setup) ? 'setup' : onRequest.includes(hooks.admin) || (schema.security?.length ?? 0) > 0 ? 'admin' : 'none';
    for (const method of [route.method].flat()) {
      into.push({
        method,
        url: route.url,
        module: current(),
        summary: schema.summary,
        hidden: schema.hide === true,
        access,
        scope: route.config?.scope,
        mfaVerified: route.config?.mfaVerified === true,
        // Written for an authenticated administrator (or, on a token-owner route, for the token's owner).
        audited: isAuditedRoute({ method, config: route.config ?? {} }) && (access !== 'none' || route.config?.audit === 'token-owner'),
      });
    }
  });
}
