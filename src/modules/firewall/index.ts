import type { FastifyInstance } from 'fastify';
import { NftClient } from '../../adapters/nftables/nft.js';
import type { Infra } from '../../infra/index.js';
import type { RouteKit } from '../route-types.js';
import { FirewallRepository } from './firewall.repository.js';
import { FirewallService } from './firewall.service.js';
import type { RevertScheduler } from './firewall.service.js';

export { firewallCommands } from './commands.js';
export type { FirewallService, RevertScheduler } from './firewall.service.js';
export { compileRuleset } from './rules.js';

export function createFirewallModule(infra: Pick<Infra, 'db' | 'clock' | 'settings' | 'helper' | 'log'>) {
  const { settings } = infra;
  const service = new FirewallService(new FirewallRepository(infra.db), new NftClient(infra.helper), infra.clock, {
    revertSeconds: settings.firewallRevertSeconds,
    sshPort: 22,
    apiPort: settings.apiPort,
  });
  // The running service keeps the timer itself; the CLI starts a process that outlives it (commands.ts).
  const inProcess: RevertScheduler = (id, seconds) => {
    setTimeout(() => {
      service.revertUnconfirmed(id).then(
        (done) => done && infra.log.warn({ firewall: { reverted: id } }, 'forced firewall change not confirmed: reverted'),
        (err: unknown) => infra.log.error({ err }, 'firewall revert failed'),
      );
    }, seconds * 1000).unref();
  };
  return {
    service,
    /** At service start: re-arm the revert of a forced change left unconfirmed by a process that has ended. */
    resumePendingRevert: () => service.resumePending(inProcess),
    routes: async (app: FastifyInstance, kit: RouteKit) => (await import('./routes.js')).firewallRoutes(app, service, inProcess, kit.hooks, kit.errors),
  };
}
export type FirewallModule = ReturnType<typeof createFirewallModule>;
