import type { FastifyInstance } from 'fastify';
import type { Infra } from '../../infra/index.js';
import type { ConfigFileHost, DaemonReloader } from '../../adapters/config-applier/index.js';
import type { RouteKit } from '../route-types.js';
import { DaemonState } from './daemon-state.js';
import type { LimitsPaths } from './daemon-state.js';
import { LimitRepository } from './limit.repository.js';
import { limitRows } from './limit-drift.js';
import { LimitsApplier } from './limits-apply.js';
import type { Checkers } from './limits-apply.js';
import { LimitsService } from './limits.service.js';
import type { LimitsChanged } from './limits.service.js';

export { limitCommands } from './commands.js';
export type { LimitsService, LimitsChanged } from './limits.service.js';
export type { LimitsPaths } from './daemon-state.js';
export { renderJailThresholds } from './limit-render.js';

export type LimitsDeps = {
  /** Told after a change is stored (the composition root pushes send-rate defaults, signals other processes). */
  onChanged?: LimitsChanged;
  /** Default: the privileged helper's `reload <daemon>`. */
  reloader?: DaemonReloader;
  host?: ConfigFileHost;
  checkers?: Checkers;
};

/** The limits: stored values over their defaults, `limits show` with drift, and `limits apply`. */
export function createLimitsModule(infra: Pick<Infra, 'db' | 'clock' | 'settings' | 'helper'>, deps: LimitsDeps = {}) {
  const { settings } = infra;
  const service = new LimitsService(new LimitRepository(infra.db), settings.limitDefaults, infra.clock, deps.onChanged);
  const h = settings.helper;
  const paths: LimitsPaths = {
    postfixDir: h.postfixConfigDir,
    rspamdLocalDir: h.rspamdLocalDir,
    dovecotConfig: h.dovecotConfig ?? '/etc/dovecot/dovecot.conf',
    fail2banDir: h.fail2banConfigDir,
    fail2banSocket: h.fail2banSocket,
  };
  const state = new DaemonState(paths);
  const reloader: DaemonReloader = deps.reloader ?? { reload: async (daemon) => void (await infra.helper.run('reload', [daemon])) };
  const applier = new LimitsApplier(state, reloader, deps.host, deps.checkers);
  return {
    service,
    /** Every limit with its default, the value in force in its daemon and whether they differ. */
    show: async () => limitRows(await service.refresh(), service.defaults, state),
    /** Renders, checks and reloads the daemons with the stored limits (all or nothing). */
    apply: async () => applier.apply(await service.refresh()),
    routes: async (app: FastifyInstance, kit: RouteKit) => (await import('./routes.js')).limitRoutes(app, { service, apply: async () => applier.apply(await service.refresh()) }, kit),
  };
}
export type LimitsModule = ReturnType<typeof createLimitsModule>;
