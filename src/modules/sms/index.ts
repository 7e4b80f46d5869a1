import type { FastifyInstance } from 'fastify';
import type { Infra } from '../../infra/index.js';
import type { RouteKit } from '../route-types.js';
import { ProviderRepository } from './provider.repository.js';
import { ProviderService } from './provider.service.js';
import { SmsSender } from './sms.service.js';
import type { SendFn } from './sms.service.js';

export { DEFAULT_PROVIDER, PROVIDER_CODES, isProviderCode } from './provider-defaults.js';
export type { ProviderCode } from './provider-defaults.js';
export type { ProviderService, ProviderView } from './provider.service.js';
export type { SendFn, SmsSender } from './sms.service.js';

/** What MFA asks of the providers: can this one send? */
export type ProviderCredentials = Pick<ProviderService, 'hasCredentials'>;

export function createSmsModule(infra: Pick<Infra, 'db' | 'dialect' | 'box' | 'clock' | 'settings' | 'outbound' | 'log'>, opts: { sendSms?: SendFn | undefined } = {}) {
  const providers = new ProviderService(new ProviderRepository(infra.db, infra.dialect), infra.box, infra.clock, infra.settings.smsProviders, infra.outbound);
  const sender = new SmsSender(providers, infra.outbound, () => infra.log, opts.sendSms);
  return {
    providers,
    sender,
    routes: async (app: FastifyInstance, kit: RouteKit) => (await import('./routes.js')).providerRoutes(app, providers, kit.hooks, kit.errors),
  };
}
export type SmsModule = ReturnType<typeof createSmsModule>;
