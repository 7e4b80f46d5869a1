import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { DomainCreateBody, DomainParam as Param, DomainPatchBody, DomainSchema, DomainSortQuery } from './schema.js';
import { ADMIN_SECURITY as security } from '../route-types.js';
import type { AdminHooks, RouteErrors } from '../route-types.js';
import { PagedOf, PageQuery, pageOf } from '../paging.schema.js';
import type { DomainService } from './domain.service.js';


export function domainRoutes(app: FastifyInstance, domains: DomainService, hooks: AdminHooks, errors: RouteErrors): void {
  const r = app.withTypeProvider<TypeBoxTypeProvider>();
  const tags = ['domains'];
  r.post('/domains', {
    onRequest: hooks.admin,
    config: { scope: 'accounts' },
    schema: { tags, security, description: 'Adds a mail domain (lowercase ASCII, IDNs in punycode). A domain that already exists is 409, except with generate_dkim when it has no DKIM keys yet (an earlier add that stopped between its steps): then its keys are made (201). With generate_dkim its DKIM keys are made and Rspamd signs its mail at once; the answer holds the records to publish (a failure removes the domain again: 502 when the root helper fails, 503 when it cannot be reached).', summary: 'Add a mail domain', body: DomainCreateBody, response: { 201: DomainSchema, ...errors(400, 401, 403, 409, 422, 502, 503) } },
    handler: async (req, reply) => reply.status(201).send(req.body.generate_dkim ? await domains.createWithDkim(req.body.name) : await domains.create(req.body.name)),
  });
  r.get('/domains', {
    onRequest: hooks.admin,
    config: { scope: 'accounts' },
    schema: {
      tags, security, description: 'Pages through the domains, by name unless `sort` names another order, each with how many accounts and aliases it has; `q` keeps the names that contain it (case-insensitive), `total` counts those.', summary: 'List domains with their account and alias counts, optionally those whose name contains a text',
      querystring: Type.Object({ ...PageQuery, q: Type.Optional(Type.String({ maxLength: 253, description: 'part of a domain name: letters, digits, dots, hyphens' })), sort: DomainSortQuery }),
      response: { 200: PagedOf(DomainSchema, 'DomainPage'), ...errors(400, 401, 403, 422) },
    },
    handler: (req) => domains.list(pageOf(req.query), { q: req.query.q }, req.query.sort),
  });
  r.get('/domains/:domain', {
    onRequest: hooks.admin,
    config: { scope: 'accounts' },
    schema: { tags, security, description: 'Reads one domain by name or id, with its account and alias counts.', summary: 'One domain', params: Param, response: { 200: DomainSchema, ...errors(400, 401, 403, 404) } },
    handler: (req) => domains.get(req.params.domain),
  });
  r.patch('/domains/:domain', {
    onRequest: hooks.admin,
    config: { scope: 'accounts' },
    schema: { tags, security, description: 'Turns a domain on or off; the answer is the domain as stored.', summary: 'Turn a domain on or off', params: Param, body: DomainPatchBody, response: { 200: DomainSchema, ...errors(400, 401, 403, 404, 422) } },
    handler: (req) => domains.setActive(req.params.domain, req.body.active),
  });
  r.delete('/domains/:domain', {
    onRequest: hooks.admin,
    config: { scope: 'accounts', reauth: true },
    schema: { tags, security, description: "Deletes a domain; one that still has accounts or aliases is 409. Its DKIM keys are retired with it: the root helper re-applies Rspamd's signing configuration without the domain and removes its key files, then the domain is deleted, its keys marked retired (a selector is never reused) and its rotation and DNS provider settings dropped. When the helper cannot do its part nothing is deleted: 503 when it cannot be reached, 502 when it fails, 409 when Rspamd's check refuses the new configuration; the detail says what to do. Records already published in a DNS provider stay there.", summary: 'Delete a domain that has no accounts or aliases left', params: Param, response: { 204: Type.Null(), ...errors(400, 401, 403, 404, 409, 502, 503) } },
    handler: async (req, reply) => {
      await domains.delete(req.params.domain);
      return reply.status(204).send(null);
    },
  });
}
