import type { FastifyInstance } from 'fastify';
import type { Infra } from '../../infra/index.js';
import type { RouteKit } from '../route-types.js';
import { ApiKeyRepository } from './api-key.repository.js';
import { ApiKeyService } from './api-key.service.js';

export { looksLikeApiKey, MAX_LIFETIME_DAYS } from './api-key.service.js';
export type { ApiKeyCreated, ApiKeyInput, ApiKeyPrincipal, ApiKeyService, ApiKeyView } from './api-key.service.js';

/** What the admin guard asks of the API keys: who is this key (or nobody)? */
export type ApiKeyVerifier = Pick<ApiKeyService, 'validate'>;

/** Scoped API keys for automation: `/auth/api-keys` and `mailsvc api-keys`. */
export function createApiKeysModule(infra: Pick<Infra, 'db' | 'clock'>) {
  const service = new ApiKeyService(new ApiKeyRepository(infra.db), infra.clock);
  return {
    service,
    routes: async (app: FastifyInstance, kit: RouteKit) => (await import('./routes.js')).apiKeyRoutes(app, service, kit.hooks, kit.errors),
  };
}
export type ApiKeysModule = ReturnType<typeof createApiKeysModule>;
