import type { FastifyInstance } from 'fastify';
import type { Infra } from '../../infra/index.js';
import { DaemonState, limitRows, limitsPaths } from '../../adapters/limits-config/index.js';
import type { LimitsApplyOutcome } from '../../adapters/limits-config/index.js';
import { AppError } from '../../shared/errors.js';
import { DAEMON_LIMITS } from '../../shared/limit-keys.js';
import type { LimitValues } from '../../shared/limit-keys.js';
import type { RouteKit } from '../route-types.js';
import { LimitRepository } from './limit.repository.js';
import { LimitsService } from './limits.service.js';
import type { LimitIgnored, LimitsChanged } from './limits.service.js';
import type { ApplyReport } from './schema.js';

export { limitCommands } from './commands.js';
export type { LimitsService, LimitsChanged, IgnoredLimit } from './limits.service.js';
export { ignoredMessage } from './limits.service.js';
export type { LimitsPaths } from '../../adapters/limits-config/index.js';

export type LimitsDeps = {
  /** Told after a change is stored (the composition root pushes send-rate defaults, signals other processes). */
  onChanged?: LimitsChanged;
  /** Told once per process for each stored value this version refuses (the default is used instead). */
  onIgnored?: LimitIgnored;
};

/** The limits the daemons' files hold: what `apply-limits` takes (the service reads the others itself). */
const daemonValues = (values: LimitValues): Record<string, number> =>
  Object.fromEntries(DAEMON_LIMITS.map((l) => [l.key, values[l.key] ?? l.default]));

/** The limits: stored values over their defaults, `limits show` with drift, and `limits apply`. */
export function createLimitsModule(infra: Pick<Infra, 'db' | 'clock' | 'settings' | 'helper'>, deps: LimitsDeps = {}) {
  const { settings } = infra;
  const service = new LimitsService(new LimitRepository(infra.db), settings.limitDefaults, infra.clock, deps.onChanged, deps.onIgnored);
  const state = new DaemonState(limitsPaths(settings.helper));
  /**
   * The privileged helper renders, checks and reloads (`apply-limits`): the
   * service sends the numbers, never file content, and cannot write /etc itself.
   */
  const apply = async (): Promise<ApplyReport> => {
    const values = await service.refresh();
    const outcome = JSON.parse((await infra.helper.run('apply-limits', [JSON.stringify(daemonValues(values))])).stdout) as LimitsApplyOutcome;
    if (!outcome.ok) throw new AppError('conflict', outcome.detail);
    return outcome.report;
  };
  return {
    service,
    /** Every limit with its default, the value in force in its daemon and whether they differ. */
    show: async () => limitRows(await service.refresh(), service.defaults, state),
    /** Renders, checks and reloads the daemons with the stored limits (all or nothing). */
    apply,
    routes: async (app: FastifyInstance, kit: RouteKit) => (await import('./routes.js')).limitRoutes(app, { service, apply }, kit),
  };
}
export type LimitsModule = ReturnType<typeof createLimitsModule>;
