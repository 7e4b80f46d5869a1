import type { FastifyInstance } from 'fastify';
import type { Infra } from '../../infra/index.js';
import type { DomainLookup } from '../domains/index.js';
import type { RoutingGuard } from '../routing/index.js';
import type { RouteKit } from '../route-types.js';
import { AliasService } from './alias.service.js';

export { aliasCommands } from './commands.js';
export type { AliasView } from './schema.js';
export type { AliasService } from './alias.service.js';

export function createAliasesModule(infra: Pick<Infra, 'db' | 'clock'>, deps: { domains: DomainLookup; routing: RoutingGuard }) {
  const service = new AliasService(infra.db, deps.domains, deps.routing, infra.clock);
  return {
    service,
    routes: async (app: FastifyInstance, kit: RouteKit) => (await import('./routes.js')).aliasRoutes(app, service, kit.hooks, kit.errors),
  };
}
export type AliasesModule = ReturnType<typeof createAliasesModule>;
