import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { ADMIN_SECURITY as security } from '../route-types.js';
import type { AdminHooks, RouteErrors } from '../route-types.js';
import type { ProviderService } from './provider.service.js';
import { ProviderRecord, ProviderUpdateBody } from './schema.js';


export function providerRoutes(app: FastifyInstance, providers: ProviderService, hooks: AdminHooks, errors: RouteErrors): void {
  const r = app.withTypeProvider<TypeBoxTypeProvider>();

  r.get('/auth/mfa/providers', {
    onRequest: hooks.setup,
    schema: {
      tags: ['mfa'],
      description: 'Lists each SMS provider with its base URL, send path, sender and route, stored or defaulted from the environment. Secrets are never returned: `has_client_secret` and `has_api_key` say whether they are set.',
      summary: 'The SMS providers, stored values or defaults; secrets only as has_* flags',
      security,
      response: { 200: Type.Array(ProviderRecord), ...errors(401, 403, 429) },
    },
    handler: () => providers.list(),
  });

  r.put('/auth/mfa/providers', {
    onRequest: hooks.setup,
    schema: {
      tags: ['mfa'],
      description: 'Creates or updates one provider record. `base_url` must be a public HTTPS address; secrets are stored encrypted and can be cleared with `clear_secrets`.',
      summary: 'Create or change one SMS provider record',
      security,
      body: ProviderUpdateBody,
      response: { 200: ProviderRecord, ...errors(400, 401, 403, 413, 422, 429) },
    },
    handler: (req) => providers.put(req.body),
  });
}
