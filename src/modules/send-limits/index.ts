import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import type { Infra } from '../../infra/index.js';
import type { AccountLookup } from '../accounts/index.js';
import type { RouteKit } from '../route-types.js';
import { FileLimitMap, RedisLimitMap } from './limit-map.js';
import { SendCounter } from './policy-counter.js';
import { startPolicyServer } from './policy-server.js';
import type { PolicyServerOptions } from './policy-server.js';
import type { PolicyListen } from '../../config/mail-settings.js';
import type { Limits } from '../../shared/send-rate.js';
import { SendLimitsService } from './send-limits.service.js';

export { sendLimitCommands } from './commands.js';
export type { SendLimitsService } from './send-limits.service.js';

export function createSendLimitsModule(infra: Pick<Infra, 'settings' | 'redis' | 'log' | 'instruments'>, deps: { accounts: Pick<AccountLookup, 'listAll'>; defaults?: () => Limits }) {
  const { settings, redis } = infra;
  const file = join(settings.dataDir, 'send-limits.json');
  const service = new SendLimitsService(deps.accounts, redis ? new RedisLimitMap(redis) : new FileLimitMap(file), deps.defaults ?? (() => settings.mail.sendRateDefaults));
  let counter: SendCounter | undefined;
  const counterOf = (): SendCounter => (counter ??= new SendCounter(redis));
  return {
    service,
    /** Where the limit maps live: Redis, or a JSON file under the data directory. */
    target: redis ? 'redis' : file,
    get counter(): SendCounter {
      return counterOf();
    },
    startPolicyServer: (listen: PolicyListen, opts: PolicyServerOptions = {}) =>
      startPolicyServer(listen, service, counterOf(), infra.log, { onDecision: (action, seconds) => infra.instruments.policyDecision(action, seconds), ...opts }),
    routes: async (app: FastifyInstance, kit: RouteKit) => (await import('./routes.js')).sendLimitRoutes(app, service, kit.hooks, kit.errors),
  };
}
export type SendLimitsModule = ReturnType<typeof createSendLimitsModule>;
