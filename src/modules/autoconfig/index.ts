import type { FastifyInstance } from 'fastify';
import type { Infra } from '../../infra/index.js';
import type { AccountLookup } from '../accounts/index.js';
import type { AppPasswordService } from '../app-passwords/index.js';
import type { DomainLookup } from '../domains/index.js';
import type { RouteKit } from '../route-types.js';
import { AutoconfigService } from './autoconfig.service.js';
import type { MobileconfigInput } from './render.js';

export type { AutoconfigService } from './autoconfig.service.js';
export type { MobileconfigInput, ClientSettings } from './render.js';

/** What the self-service portal asks: an Apple profile for a mailbox, with a fresh app password inside when given. */
export type MobileconfigRenderer = { renderMobileconfig(input: MobileconfigInput): Promise<string> };

export type AutoconfigDeps = { domains: Pick<DomainLookup, 'resolve'>; accounts: Pick<AccountLookup, 'resolve'>; appPasswords: Pick<AppPasswordService, 'create'> };

export function createAutoconfigModule(infra: Pick<Infra, 'settings' | 'redis'>, deps: AutoconfigDeps) {
  const service = new AutoconfigService(infra.settings.autoconfig, deps.domains, infra.redis);
  return {
    service,
    /**
     * The Apple profile of a mailbox of an active domain (404 otherwise), with
     * `appPassword` inside when given (the caller made it for this device and
     * has authenticated the mailbox user or the administrator).
     */
    renderMobileconfig: (input: MobileconfigInput): Promise<string> => service.renderMobileconfig(input),
    routes: async (app: FastifyInstance, kit: RouteKit) => (await import('./routes.js')).autoconfigRoutes(app, { service, accounts: deps.accounts, appPasswords: deps.appPasswords }, kit),
  };
}
export type AutoconfigModule = ReturnType<typeof createAutoconfigModule>;
