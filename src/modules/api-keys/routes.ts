import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { ADMIN_SECURITY as security } from '../route-types.js';
import type { AdminHooks, RouteErrors } from '../route-types.js';
import type { ApiKeyService } from './api-key.service.js';
import { PagedOf, PageQuery, pageOf } from '../paging.schema.js';
import { ApiKey, ApiKeyBody, ApiKeyCreated, ApiKeyParam } from './schema.js';

/**
 * /auth/api-keys: the administrator only, with a token earned with the second
 * factor once one is enrolled; never with an API key.
 */
export function apiKeyRoutes(app: FastifyInstance, keys: ApiKeyService, hooks: AdminHooks, errors: RouteErrors): void {
  const r = app.withTypeProvider<TypeBoxTypeProvider>();
  const tags = ['api-keys'];
  const config = { mfaVerified: true };

  r.post('/auth/api-keys', {
    onRequest: hooks.admin,
    // A key outlives the token that made it: a recent sign-in (or the password and a code) makes it.
    config: { ...config, reauth: 'every-client' as const },
    schema: {
      tags, security, description: 'Creates an API key with scopes and an expiry at most 366 days ahead. The key is in this answer only; only its hash is stored. API keys never reach /auth/ endpoints.', summary: 'Create a scoped API key: the key is in this answer only', body: ApiKeyBody,
      response: { 201: ApiKeyCreated, ...errors(400, 401, 403, 413, 422, 429) },
    },
    handler: async (req, reply) => reply.status(201).send(await keys.create(req.body, req.admin?.subject ?? 'admin')),
  });

  r.get('/auth/api-keys', {
    onRequest: hooks.admin,
    config,
    schema: {
      tags, security, querystring: Type.Object(PageQuery, { additionalProperties: false }),
      description: 'Lists the API keys that are not revoked: name, scopes, expiry, last use. Never the key. A page of them, {items, total, limit, offset}, like every list.',
      summary: 'The API keys not revoked (never the secret)',
      response: { 200: PagedOf(ApiKey, 'ApiKeyList'), ...errors(400, 401, 403, 422, 429) },
    },
    handler: async (req) => {
      const page = pageOf(req.query);
      const all = await keys.list();
      return { items: all.slice(page.offset, page.offset + page.limit), total: all.length, ...page };
    },
  });

  r.delete('/auth/api-keys/:id', {
    onRequest: hooks.admin,
    config,
    schema: { tags, security, description: 'Revokes an API key; every instance refuses it from the next request on.', summary: 'Revoke an API key (at once, on every instance)', params: ApiKeyParam, response: { 204: Type.Null(), ...errors(401, 403, 404, 429) } },
    handler: async (req, reply) => {
      await keys.revoke(req.params.id);
      return reply.status(204).send(null);
    },
  });
}
