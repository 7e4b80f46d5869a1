import { DAEMON_LIMITS, parseLimitValue } from '../shared/limit-keys.js';
import type { Param } from './action-types.js';
import { isRecord, parseJsonOr } from '../shared/json-value.js';


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
    const given = parseJsonOr(raw, 'values must be a JSON object');
    if (!isRecord(given)) throw new Error('values must be a JSON object');
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

