import Fastify from 'fastify';
import type { FastifyBaseLogger, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import type { Modules } from '../app/modules.js';
import type { AdminGuard } from '../modules/auth/index.js';
import { PANEL_CALL_HEADER, REAUTH_DETAIL } from '../modules/panel/index.js';
import type { PanelCallMarker } from '../modules/panel/index.js';
import { AppError, REAUTH_HEADER } from '../shared/errors.js';
import type { AdminHook, AdminHooks, AdminPrincipal } from '../modules/route-types.js';
import { routeAccessOf } from '../modules/route-types.js';
import { ErrorBody, errorResponses } from './error-body.js';
import { errorHandler } from './error-handler.js';
import { registerJsonParser } from './json-parser.js';
import { clientErrorHandler, registerNotFound } from './protocol-errors.js';
import { registerNoStore } from './no-store.js';
import { attachCompilers, lazyCompilers } from './lazy-compilers.js';
import { registerOptionalBodies, swaggerOptions } from './openapi.js';
import { registerAuditHook } from './audit-hook.js';
import { registerClientIp } from './client-ip.js';
import { registerBodyTimeout } from './body-timeout.js';
import { RequestLog } from './request-log.js';
import { collectRoutes } from './route-catalog.js';
import type { RouteEntry } from './route-catalog.js';

export const BODY_LIMIT = 1024 * 1024;

function adminHooks(guard: AdminGuard, panel: PanelCallMarker | undefined): AdminHooks {
  // A destructive call the panel's proxy made for a session whose second factor is not fresh.
  // A dry run (dry_run=true) changes nothing and needs no fresh factor.
  const reauth = (req: FastifyRequest): void => {
    if (!panel || req.routeOptions.config.reauth === undefined || req.routeOptions.config.reauth === false) return;
    const dryRun = (req.query as { dry_run?: string } | undefined)?.dry_run === 'true';
    if (!dryRun && panel.read(req.headers[PANEL_CALL_HEADER])?.fresh === false) throw new AppError('reauth_required', REAUTH_DETAIL);
  };
  // What changes how the administrator signs in needs a recent sign-in from every client, the panel's included.
  const everyClient = (req: FastifyRequest): boolean => req.routeOptions.config.reauth === 'every-client';
  const fresh = async (req: FastifyRequest, principal: AdminPrincipal): Promise<void> => {
    req.admin = principal;
    reauth(req);
    if (everyClient(req)) await guard.assertFresh(principal, req.clientIp, headerValue(req.headers[REAUTH_HEADER]));
  };
  // A token this process holds is checked without a promise and the hook calls `done` at once;
  // anything else returns the guard's promise (Fastify takes either; a throw is the request's error).
  const hook = (setupPath: boolean): AdminHook =>
    function adminHook(req, reply, done) {
      const request = { ip: req.clientIp, authorization: req.headers.authorization, setupPath, route: routeAccessOf(req) };
      const now = guard.authenticateNow(request);
      if (now === undefined) return guard.authenticate(request).then((principal) => fresh(req, principal));
      if (everyClient(req)) return fresh(req, now);
      req.admin = now;
      reauth(req);
      done?.();
      return undefined;
    };
  return { admin: hook(false), setup: hook(true) };
}

function headerValue(v: string | string[] | undefined): string | undefined {
  return typeof v === 'string' ? v : undefined;
}

/**
 * The Fastify app: schemas, OpenAPI, error mapping, every module's routes. No
 * business rules here. `routes`: filled with every route as it is registered
 * (the docs generator and the contract test).
 */
export async function buildApp(modules: Modules, opts: { routes?: RouteEntry[] } = {}): Promise<FastifyInstance> {
  const { settings, log } = modules.infra;
  // Each route's validator and serializer is built on its first use (src/http/lazy-compilers.ts).
  const compilers = lazyCompilers();
  const app = Fastify({
    schemaController: { compilersFactory: compilers.compilersFactory },
    loggerInstance: log as FastifyBaseLogger,
    bodyLimit: BODY_LIMIT,
    // One line per request instead of Fastify's two, successful reads only at debug.
    logController: new RequestLog(log),
    // No child logger per request (it costs more than the rest of a cached Bearer check): the few
    // lines written for a request (its request line, a 5xx) carry reqId themselves.
    childLoggerFactory: (logger) => logger,
    // Backstop behind registerBodyTimeout for bodies Fastify never reads (GET): a 408 from clientErrorHandler.
    requestTimeout: settings.httpBodyTimeout * 2000,
    trustProxy: settings.trustedProxies.length > 0 ? settings.trustedProxies : false,
    // Fastify answers a malformed URL itself; keep the API's error shape.
    frameworkErrors: (error, _req, reply) => {
      void (reply as unknown as FastifyReply).status(400).send({ detail: error.code === 'FST_ERR_BAD_URL' ? 'Malformed URL' : 'Bad request' });
    },
    // Types in bodies are exact (no "1" for 1); an unknown field is a 422 naming it, never dropped silently.
    // `x-unit`, `x-control` and `x-default` annotate a field for the panel's controls (docs/panel.md); they validate
    // nothing (a JSON-schema `default` would be filled into the request by the validator).
    ajv: { customOptions: { coerceTypes: false, removeAdditional: false, allErrors: false, keywords: ['x-unit', 'x-control', 'x-default'] } },
    // What Node's parser refuses (unknown method, 431, 408) keeps the API's error shape too.
    clientErrorHandler,
  });
  attachCompilers(app, compilers);
  registerJsonParser(app);
  registerBodyTimeout(app, settings.httpBodyTimeout);
  registerClientIp(app, settings.trustedProxies.length > 0, log);
  app.setErrorHandler(errorHandler);
  registerNotFound(app);
  registerNoStore(app);
  app.addSchema(ErrorBody);

  const [auth, audit] = await Promise.all([modules.get('auth'), modules.get('audit')]);
  // The panel's calls are told apart from any other by a marker only this process knows.
  const panel = settings.enableWebPanel ? await modules.get('panel') : undefined;
  const kit = { hooks: adminHooks(auth.guard, panel?.marker), errors: errorResponses };
  let registering: string | null = null;
  if (opts.routes) collectRoutes(app, kit.hooks, opts.routes, () => registering);
  registerOptionalBodies(app);
  await app.register(swagger, swaggerOptions(app, kit.hooks));
  await app.register(swaggerUi, { routePrefix: '/docs' });

  // Every state-changing call of an administrator is recorded once its answer has gone out.
  registerAuditHook(app, audit.service, (token) => auth.tokens.validate(token));
  for (const { manifest, module } of await modules.http()) {
    registering = manifest.name;
    await module.routes(app, kit);
  }
  registering = null;
  app.get('/openapi.json', { schema: { hide: true } }, () => app.swagger());
  await app.ready();
  return app;
}
