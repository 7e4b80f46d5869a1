import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { ADMIN_SECURITY as security } from '../route-types.js';
import type { AdminHooks, RouteErrors } from '../route-types.js';
import type { AppPasswordService } from './app-password.service.js';
import { AccountParam, AppPasswordBody, AppPasswordCreated, AppPasswordParam, AppPasswordSchema } from './schema.js';

/** An account's app passwords, under /accounts/{id}/app-passwords. */
export function appPasswordRoutes(app: FastifyInstance, appPasswords: AppPasswordService, hooks: AdminHooks, errors: RouteErrors): void {
  const r = app.withTypeProvider<TypeBoxTypeProvider>();
  const tags = ['accounts'];
  const onRequest = hooks.admin;
  // An API key with the `accounts` scope manages app passwords.
  const config = { scope: 'accounts' as const };
  r.post('/accounts/:id/app-passwords', {
    onRequest,
    config,
    schema: { tags, security, description: 'Creates a password for one mail client of the account, optionally with an expiry. The password is shown in this answer only; only a keyed hash is stored. A mailbox holds at most MAILSVC_APP_PASSWORDS_PER_MAILBOX of them (409 beyond) and gets at most MAILSVC_APP_PASSWORD_CREATIONS_PER_HOUR new ones an hour (429 beyond).', summary: 'Create an app password: the password is in this answer only', params: AccountParam, body: AppPasswordBody, response: { 201: AppPasswordCreated, ...errors(400, 401, 403, 404, 409, 422, 429) } },
    handler: async (req, reply) => reply.status(201).send(await appPasswords.create(req.params.id, req.body)),
  });
  r.get('/accounts/:id/app-passwords', {
    onRequest,
    config,
    schema: { tags, security, description: 'Lists the account\'s app passwords with their names, expiry, last use and whether they are active. The passwords themselves are never shown again.', summary: 'The account\'s app passwords (never the secret)', params: AccountParam, response: { 200: Type.Array(AppPasswordSchema), ...errors(400, 401, 403, 404) } },
    handler: (req) => appPasswords.list(req.params.id),
  });
  r.delete('/accounts/:id/app-passwords/:appId', {
    onRequest,
    config,
    schema: {
      tags, security, description: 'Revokes one app password at once and ends the account\'s open IMAP/POP sessions.', summary: 'Revoke an app password (ends the account\'s open IMAP/POP sessions)',
      params: AppPasswordParam,
      response: { 204: Type.Null(), ...errors(400, 401, 403, 404) },
    },
    handler: async (req, reply) => {
      await appPasswords.revoke(req.params.id, req.params.appId);
      return reply.status(204).send(null);
    },
  });
}
