import type { Infra } from '../../infra/index.js';
import type { RouteKit } from '../route-types.js';
import type { FastifyInstance } from 'fastify';
import { DomainRepository } from './domain.repository.js';
import { DomainService } from './domain.service.js';

export { domainCommands } from './commands.js';
export type { DomainView } from './schema.js';
export type { DomainService } from './domain.service.js';
export type { DomainRow } from './domain.repository.js';
export type { ActiveDomainsChanged, DomainDeleting, DomainKeyMaker } from './domain.service.js';
import type { ActiveDomainsChanged, DomainDeleting, DomainKeyMaker } from './domain.service.js';
import type { EventSource } from '../module-types.js';

/** What other modules may ask of the domains: find one, or insist that it exists. */
export type DomainLookup = Pick<DomainService, 'resolve' | 'requireExisting'>;

export type DomainsDeps = {
  /** The first DKIM keys of a new domain (the dns module's). */
  keys?: DomainKeyMaker;
  /** `domain.deleting`, emitted to whoever listens. */
  deleting?: EventSource<DomainDeleting>;
  /** The active domains changed (postsrsd's exclusions follow at once); best effort. */
  activeChanged?: ActiveDomainsChanged;
};

export function createDomainsModule(infra: Pick<Infra, 'db' | 'clock'>, deps: DomainsDeps = {}) {
  const service = new DomainService(new DomainRepository(infra.db), infra.clock, deps.keys, deps.deleting, deps.activeChanged);
  return {
    service,
    routes: async (app: FastifyInstance, kit: RouteKit) => (await import('./routes.js')).domainRoutes(app, service, kit.hooks, kit.errors),
  };
}
export type DomainsModule = ReturnType<typeof createDomainsModule>;
