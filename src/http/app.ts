import Fastify from 'fastify';
import type { FastifyBaseLogger, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import swagger from '@fastify/swagger';
import ipaddr from 'ipaddr.js';
import swaggerUi from '@fastify/swagger-ui';
import type { AppContext } from '../app-context.js';
import { SERVICE_VERSION } from '../shared/version.js';
import { authRoutes } from '../modules/auth/routes.js';
import { mfaRoutes } from '../modules/mfa/routes.js';
import { providerRoutes } from '../modules/sms/routes.js';
import { healthRoutes } from '../modules/health/routes.js';
import { domainRoutes } from '../modules/domains/routes.js';
import { accountRoutes } from '../modules/accounts/routes.js';
import { aliasRoutes } from '../modules/aliases/routes.js';
import type { AdminHooks } from '../modules/route-types.js';
import { routeAccessOf } from '../modules/route-types.js';
import { apiKeyRoutes } from '../modules/api-keys/routes.js';
import { ErrorBody, errorResponses } from './error-body.js';
import { errorHandler } from './error-handler.js';
import { registerJsonParser } from './json-parser.js';

export const BODY_LIMIT = 1024 * 1024;

function adminHooks(ctx: AppContext): AdminHooks {
  const hook = (setupPath: boolean) => async (req: FastifyRequest): Promise<void> => {
    req.admin = await ctx.guard.authenticate({ ip: req.clientIp, authorization: req.headers.authorization, setupPath, route: routeAccessOf(req) });
  };
  return { admin: hook(false), setup: hook(true) };
}

/** The Fastify app: schemas, OpenAPI, error mapping, routes. No business rules here. */
export async function buildApp(ctx: AppContext): Promise<FastifyInstance> {
  const app = Fastify({
    loggerInstance: ctx.log as FastifyBaseLogger,
    bodyLimit: BODY_LIMIT,
    trustProxy: ctx.settings.trustedProxies.length > 0 ? ctx.settings.trustedProxies : false,
    // Types in bodies are exact (no "1" for 1); unknown fields are dropped.
    // Fastify answers a malformed URL itself; keep the API's error shape.
    frameworkErrors: (error, _req, reply) => {
      void (reply as unknown as FastifyReply).status(400).send({ detail: error.code === 'FST_ERR_BAD_URL' ? 'Malformed URL' : 'Bad request' });
    },
    ajv: { customOptions: { coerceTypes: false, removeAdditional: true, allErrors: false } },
  });
  registerJsonParser(app);
  const trusting = ctx.settings.trustedProxies.length > 0;
  app.decorateRequest('clientIp', {
    getter(this: FastifyRequest): string {
      // A trusted proxy could pass on junk in X-Forwarded-For; only an IP address counts.
      if (!trusting || ipaddr.isValid(this.ip)) return this.ip;
      return this.socket.remoteAddress ?? 'unknown';
    },
  });
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

  const hooks = adminHooks(ctx);
  authRoutes(app, ctx.auth, errorResponses);
  mfaRoutes(app, ctx.mfa, hooks, errorResponses);
  providerRoutes(app, ctx.providers, hooks, errorResponses);
  healthRoutes(app, ctx.health, hooks, errorResponses);
  domainRoutes(app, ctx.domains, hooks, errorResponses);
  accountRoutes(app, { accounts: ctx.accounts, appPasswords: ctx.appPasswords, sendLimits: ctx.sendLimits }, hooks, errorResponses);
  aliasRoutes(app, ctx.aliases, hooks, errorResponses);
  apiKeyRoutes(app, ctx.apiKeys, hooks, errorResponses);
  app.get('/openapi.json', { schema: { hide: true } }, () => app.swagger());
  await app.ready();
  return app;
}
