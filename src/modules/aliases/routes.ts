import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { ADMIN_SECURITY as security } from '../route-types.js';
import type { AdminHooks, RouteErrors } from '../route-types.js';
import { PagedOf, PageQuery, pageOf } from '../paging.schema.js';
import type { AliasService } from './alias.service.js';
import { AliasParam as Param, AliasSchema, AliasSortQuery } from './schema.js';


export function aliasRoutes(app: FastifyInstance, aliases: AliasService, hooks: AdminHooks, errors: RouteErrors): void {
  const r = app.withTypeProvider<TypeBoxTypeProvider>();
  const tags = ['aliases'];
  const onRequest = hooks.admin;
  // What an API key needs to change these (a GET needs `read`, or this scope).
  const config = { scope: 'accounts' as const };
  r.post('/aliases', {
    onRequest,
    config,
    schema: {
      tags, security, description: 'Adds an alias (or `@domain` catch-all) that delivers to one or more addresses.', summary: 'Add an alias',
      body: Type.Object({ source: Type.String({ maxLength: 320 }), destinations: Type.Array(Type.String({ maxLength: 320 }), { maxItems: 100 }), active: Type.Optional(Type.Boolean()) }, { additionalProperties: false }),
      response: { 201: AliasSchema, ...errors(400, 401, 403, 409, 422) },
    },
    handler: async (req, reply) => reply.status(201).send(await aliases.create(req.body)),
  });
  r.get('/aliases', {
    onRequest,
    config,
    schema: { tags, security, description: 'Pages through the aliases by source (or the order `sort` names), optionally of one domain; `q` keeps the aliases whose source or a destination contains it (case-insensitive), `total` counts those.', summary: 'List aliases, optionally of one domain or whose source or destination contains a text', querystring: Type.Object({ ...PageQuery, domain: Type.Optional(Type.String({ maxLength: 253 })), q: Type.Optional(Type.String({ maxLength: 320, description: 'part of the source or of a destination address: letters, digits, . @ _ + = -' })), sort: AliasSortQuery }), response: { 200: PagedOf(AliasSchema, 'AliasPage'), ...errors(400, 401, 403, 404, 422) } },
    handler: (req) => aliases.list({ domain: req.query.domain, q: req.query.q }, pageOf(req.query), req.query.sort),
  });
  r.get('/aliases/:alias', {
    onRequest,
    config,
    schema: { tags, security, description: 'Reads one alias by source address or id, with its destinations.', summary: 'One alias', params: Param, response: { 200: AliasSchema, ...errors(400, 401, 403, 404) } },
    handler: (req) => aliases.get(req.params.alias),
  });
  r.delete('/aliases/:alias', {
    onRequest,
    config,
    schema: { tags, security, description: 'Deletes an alias; mail to it is no longer delivered.', summary: 'Delete an alias', params: Param, response: { 204: Type.Null(), ...errors(400, 401, 403, 404, 409) } },
    handler: async (req, reply) => {
      await aliases.delete(req.params.alias);
      return reply.status(204).send(null);
    },
  });
}
