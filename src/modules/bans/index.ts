import type { FastifyInstance } from 'fastify';
import { Fail2banClient } from '../../adapters/fail2ban/client.js';
import type { Infra } from '../../infra/index.js';
import type { RouteKit } from '../route-types.js';
import { BanRepository } from './ban.repository.js';
import { BanService } from './ban.service.js';
import { hostAddresses } from './ban-guard.js';

export { banCommands } from './commands.js';
export type { BanService } from './ban.service.js';
export type { BanView } from './schema.js';

export function createBansModule(infra: Pick<Infra, 'db' | 'clock' | 'settings' | 'helper'>) {
  const f2b = new Fail2banClient(infra.helper, infra.settings.helper.fail2banSocket);
  const service = new BanService(f2b, new BanRepository(infra.db), infra.clock, { trustedProxies: infra.settings.trustedProxies, host: hostAddresses });
  return {
    service,
    routes: async (app: FastifyInstance, kit: RouteKit) => (await import('./routes.js')).banRoutes(app, service, kit.hooks, kit.errors),
  };
}
export type BansModule = ReturnType<typeof createBansModule>;
