import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { ADMIN_SECURITY as security } from '../route-types.js';
import type { AdminHooks, RouteErrors } from '../route-types.js';
import { PagedOf, PageQuery, pageOf } from '../paging.schema.js';
import type { AccountService } from './account.service.js';
import { AccountCreateBody, AccountParam, AccountPatchBody, AccountSchema, AccountSortQuery } from './schema.js';


export function accountRoutes(app: FastifyInstance, accounts: AccountService, hooks: AdminHooks, errors: RouteErrors): void {
  const r = app.withTypeProvider<TypeBoxTypeProvider>();
  const tags = ['accounts'];
  const onRequest = hooks.admin;
  // What an API key needs to change these (a GET needs `read`, or this scope).
  const config = { scope: 'accounts' as const };

  r.post('/accounts', {
    onRequest,
    config,
    schema: { tags, security, description: 'Adds a mailbox in an existing domain, with its password (hashed for Dovecot), display name, quota and flags. An address already taken is 409.', summary: 'Add a mailbox account', body: AccountCreateBody, response: { 201: AccountSchema, ...errors(400, 401, 403, 409, 422) } },
    handler: async (req, reply) => reply.status(201).send(await accounts.create(req.body)),
  });
  r.get('/accounts', {
    onRequest,
    config,
    schema: {
      tags, security, description: 'Pages through the accounts by address (or the order `sort` names), optionally of one domain; `q` keeps the addresses that contain it (case-insensitive), `total` counts those.', summary: 'List accounts, optionally of one domain or whose address contains a text',
      querystring: Type.Object({ ...PageQuery, domain: Type.Optional(Type.String({ maxLength: 253 })), q: Type.Optional(Type.String({ maxLength: 254, description: 'part of an address: letters, digits, . @ _ + = -' })), sort: AccountSortQuery }),
      response: { 200: PagedOf(AccountSchema, 'AccountPage'), ...errors(400, 401, 403, 404, 422) },
    },
    handler: (req) => accounts.list({ ...(req.query.domain === undefined ? {} : { domain: req.query.domain }), ...(req.query.q === undefined ? {} : { q: req.query.q }) }, pageOf(req.query), req.query.sort),
  });
  r.get('/accounts/:id', {
    onRequest,
    config,
    schema: { tags, security, description: 'Reads one account by address or id. Never its password hash.', summary: 'One account', params: AccountParam, response: { 200: AccountSchema, ...errors(400, 401, 403, 404) } },
    handler: (req) => accounts.get(req.params.id),
  });
  r.patch('/accounts/:id', {
    onRequest,
    config,
    schema: { tags, security, description: 'Changes password, display name, quota or flags of an account. A new password or deactivation ends its open IMAP/POP sessions; a new password also ends its portal sessions, and with revoke_app_passwords revokes every app password of the account.', summary: 'Change an account (a new password or deactivation ends its open sessions)', params: AccountParam, body: AccountPatchBody, response: { 200: AccountSchema, ...errors(400, 401, 403, 404, 422) } },
    handler: (req) => accounts.update(req.params.id, req.body),
  });
  r.delete('/accounts/:id', {
    onRequest,
    config,
    schema: { tags, security, description: 'Deletes an account and its app passwords, and ends its open IMAP/POP sessions.', summary: 'Delete an account and its app passwords', params: AccountParam, response: { 204: Type.Null(), ...errors(400, 401, 403, 404, 409) } },
    handler: async (req, reply) => {
      await accounts.delete(req.params.id);
      return reply.status(204).send(null);
    },
  });

}
