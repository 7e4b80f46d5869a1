import { exec } from '../adapters/exec.js';
import type { HelperResult } from '../adapters/helper-client.js';
import { DaemonState, LimitsApplier } from '../adapters/limits-config/index.js';
import type { DaemonReloader } from '../adapters/config-applier/index.js';
import { LIMITS, parseLimitValue } from '../shared/limit-keys.js';
import type { LimitValues } from '../shared/limit-keys.js';
import type { Command, HelperConfig, Param } from './action-types.js';

/** The limits the daemon files hold (the others are read by the service itself and never sent here). */
const DAEMON_LIMITS = LIMITS.filter((l) => l.appliesTo.some((t) => t !== 'service'));

/**
 * `apply-limits <values>`: a JSON object holding every daemon limit
 * (`message-size-limit`, `fail2ban-sshd-maxretry` …), each checked with the
 * validator the API uses. The helper renders the daemons' files itself from
 * these numbers: it never writes file content a caller sends, since main.cf,
 * for one, names programs that run as root.
 */
export const limitValues: Param = {
  name: 'values',
  validate(raw) {
    let parsed: unknown;
    try {
      parsed = JSON.parse(raw);
    } catch {
      throw new Error('values must be a JSON object');
    }
    if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw new Error('values must be a JSON object');
    const given = parsed as Record<string, unknown>;
    const out: Record<string, number> = {};
    for (const key of Object.keys(given)) if (!DAEMON_LIMITS.some((l) => l.key === key)) throw new Error(`"${key.slice(0, 64)}" is not a limit the daemons read`);
    for (const spec of DAEMON_LIMITS) {
      if (!(spec.key in given)) throw new Error(`${spec.key} is missing`);
      try {
        out[spec.key] = parseLimitValue(spec, given[spec.key]);
      } catch (err) {
        throw new Error(`${spec.key} ${err instanceof Error ? err.message : String(err)}`);
      }
    }
    return JSON.stringify(out);
  },
};

export function applyLimits(reloadCommand: (daemon: string, cfg: HelperConfig) => Command) {
  return async ([raw]: readonly string[], cfg: HelperConfig): Promise<HelperResult> => {
    const given = JSON.parse(raw ?? '{}') as Record<string, number>;
    // The service's own limits are not rendered anywhere: their defaults stand in.
    const values = Object.fromEntries(LIMITS.map((l) => [l.key, given[l.key] ?? l.default])) as LimitValues;
    const state = new DaemonState({
      postfixDir: cfg.postfixConfigDir,
      rspamdLocalDir: cfg.rspamdLocalDir,
      dovecotConfig: cfg.dovecotConfig ?? '/etc/dovecot/dovecot.conf',
      fail2banDir: cfg.fail2banConfigDir,
      fail2banSocket: cfg.fail2banSocket,
    });
    const reloader: DaemonReloader = {
      reload: async (daemon) => {
        const cmd = reloadCommand(daemon, cfg);
        await exec(cmd.file, cmd.args, { timeoutMs: cmd.timeoutMs ?? 30_000, maxOutputBytes: 1024 * 1024 });
      },
    };
    const outcome = await new LimitsApplier(state, reloader, { settings: cfg.jails, authLog: cfg.authLog }).apply(values);
    return { code: 0, stdout: JSON.stringify(outcome), stderr: '' };
  };
}
