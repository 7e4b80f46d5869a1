import Fastify from 'fastify';
import type { FastifyBaseLogger, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import type { Modules } from '../app/modules.js';
import type { AdminGuard } from '../modules/auth/index.js';
import { SERVICE_VERSION } from '../shared/version.js';
import type { AdminHooks } from '../modules/route-types.js';
import { routeAccessOf } from '../modules/route-types.js';
import { ErrorBody, errorResponses } from './error-body.js';
import { errorHandler } from './error-handler.js';
import { registerJsonParser } from './json-parser.js';
import { registerAuditHook } from './audit-hook.js';
import { registerClientIp } from './client-ip.js';
import { registerBodyTimeout } from './body-timeout.js';
import { RequestLog } from './request-log.js';

export const BODY_LIMIT = 1024 * 1024;

function adminHooks(guard: AdminGuard): AdminHooks {
  const hook = (setupPath: boolean) => async (req: FastifyRequest): Promise<void> => {
    req.admin = await guard.authenticate({ ip: req.clientIp, authorization: req.headers.authorization, setupPath, route: routeAccessOf(req) });
  };
  return { admin: hook(false), setup: hook(true) };
}

/** The Fastify app: schemas, OpenAPI, error mapping, every module's routes. No business rules here. */
export async function buildApp(modules: Modules): Promise<FastifyInstance> {
  const { settings, log } = modules.infra;
  const app = Fastify({
    loggerInstance: log as FastifyBaseLogger,
    bodyLimit: BODY_LIMIT,
    // One line per request instead of Fastify's two, successful reads only at debug.
    logController: new RequestLog(log),
    // No child logger per request (it costs more than the rest of a cached Bearer check): the few
    // lines written for a request (its request line, a 5xx) carry reqId themselves.
    childLoggerFactory: (logger) => logger,
    // Backstop behind registerBodyTimeout for bodies Fastify never reads (GET): Node's own plain 408.
    requestTimeout: settings.httpBodyTimeout * 2000,
    trustProxy: settings.trustedProxies.length > 0 ? settings.trustedProxies : false,
    // Types in bodies are exact (no "1" for 1); unknown fields are dropped.
    // Fastify answers a malformed URL itself; keep the API's error shape.
    frameworkErrors: (error, _req, reply) => {
      void (reply as unknown as FastifyReply).status(400).send({ detail: error.code === 'FST_ERR_BAD_URL' ? 'Malformed URL' : 'Bad request' });
    },
    ajv: { customOptions: { coerceTypes: false, removeAdditional: true, allErrors: false } },
  });
  registerJsonParser(app);
  registerBodyTimeout(app, settings.httpBodyTimeout);
  registerClientIp(app, settings.trustedProxies.length > 0, log);
  app.setErrorHandler(errorHandler);
  app.setNotFoundHandler((req, reply) => reply.status(404).send({ detail: `Not found: ${req.method} ${req.url.split('?')[0]}` }));
  app.addSchema(ErrorBody);

  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: { title: 'mailsvc management API', version: SERVICE_VERSION },
      components: {
        securitySchemes: {
          bearer: { type: 'http', scheme: 'bearer' },
          basic: { type: 'http', scheme: 'basic' },
        },
      },
    },
    refResolver: { buildLocalReference: (json, _base, _frag, i) => (typeof json.$id === 'string' ? json.$id : `def-${i}`) },
  });
  await app.register(swaggerUi, { routePrefix: '/docs' });

  const [auth, audit] = await Promise.all([modules.auth(), modules.audit()]);
  const kit = { hooks: adminHooks(auth.guard), errors: errorResponses };
  // Every state-changing call of an administrator is recorded once its answer has gone out.
  registerAuditHook(app, audit.service, (token) => auth.tokens.validate(token));
  for (const module of await modules.http()) await module.routes(app, kit);
  app.get('/openapi.json', { schema: { hide: true } }, () => app.swagger());
  await app.ready();
  return app;
}
