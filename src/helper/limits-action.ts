import { exec } from '../adapters/exec.js';
import type { HelperResult } from '../adapters/helper-client.js';
import { DaemonState, LimitsApplier, limitsPaths } from '../adapters/limits-config/index.js';
import type { DaemonReloader } from '../adapters/config-applier/index.js';
import { LIMITS } from '../shared/limit-keys.js';
import type { LimitValues } from '../shared/limit-keys.js';
import type { Command, HelperConfig, RunContext } from './action-types.js';
import { publicApplyFailure } from './failure.js';

export function applyLimits(reloadCommand: (daemon: string, cfg: HelperConfig) => Command) {
  return async ([raw]: readonly string[], cfg: HelperConfig, ctx: RunContext): Promise<HelperResult> => {
    const given = JSON.parse(raw ?? '{}') as Record<string, number>;
    // The service's own limits are not rendered anywhere: their defaults stand in.
    const values = Object.fromEntries(LIMITS.map((l) => [l.key, given[l.key] ?? l.default])) as LimitValues;
    const state = new DaemonState(limitsPaths(cfg));
    const reloader: DaemonReloader = {
      reload: async (daemon) => {
        const cmd = reloadCommand(daemon, cfg);
        await exec(cmd.file, cmd.args, { timeoutMs: cmd.timeoutMs ?? 30_000, maxOutputBytes: 1024 * 1024 });
      },
    };
    const outcome = await new LimitsApplier(state, reloader, { settings: cfg.jails, authLog: cfg.authLog }).apply(values);
    // A checker's or daemon's output (it may quote a file) goes to the helper's log; the reply says which stage of which daemon failed.
    const reply = outcome.ok ? outcome : { ok: false, detail: outcome.failure ? `limits apply: ${publicApplyFailure(outcome.failure, outcome.failure.daemon, ctx.log, 'apply-limits')}` : outcome.detail };
    return { code: 0, stdout: JSON.stringify(reply), stderr: '' };
  };
}
