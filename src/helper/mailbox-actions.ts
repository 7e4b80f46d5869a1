import { ExecError, exec } from '../adapters/exec.js';
import type { HelperResult } from '../adapters/helper-client.js';
import { notInstalled } from '../shared/daemon-hints.js';
import { normalizeAddress } from '../shared/mail-names.js';
import { SIEVE_RULES_MAX, SieveRulesError, checkSieveRules, renderSieveScript } from '../shared/sieve-rules.js';
import type { ActionSpec, HelperConfig, Param, RunContext } from './action-types.js';
import { ActionFailed, logExecOutput, publicExecDetail } from './failure.js';

/**
 * The mailbox self-service actions (the user portal): a mailbox's quota, and
 * its Sieve script, which the helper renders itself from checked rules (no
 * caller hands it script text) and stores with `doveadm sieve put -a`.
 */

/** Where Dovecot keeps the mailboxes and their Sieve scripts (the deployed userdb's home=/var/vmail/%d/%n). */
export const MAIL_HOMES = '/var/vmail';
/** The one script mailsvc writes per mailbox (and activates). */
export const PORTAL_SCRIPT = 'mailsvc-portal';

const mailUser: Param = { name: 'user', validate: (raw) => normalizeAddress(raw).address };

/** The rules as JSON, checked as the API checks them (the owner is checked again in the action). */
const sieveRules: Param = {
  name: 'rules',
  safeMessage: true,
  validate(raw) {
    let parsed: unknown;
    try {
      parsed = JSON.parse(raw);
    } catch {
      throw new Error('rules must be JSON');
    }
    try {
      checkSieveRules(parsed, '');
    } catch (err) {
      throw new Error(err instanceof SieveRulesError ? err.message : 'rules are not valid');
    }
    return raw;
  },
};

const dovecotConf = (cfg: HelperConfig): string[] => (cfg.dovecotConfig ? ['-c', cfg.dovecotConfig] : []);

async function putSieve([user = '', raw = '']: readonly string[], cfg: HelperConfig, ctx: RunContext): Promise<HelperResult> {
  let script: string;
  try {
    script = renderSieveScript(checkSieveRules(JSON.parse(raw), user), user);
  } catch (err) {
    throw new ActionFailed(err instanceof SieveRulesError ? err.message : 'rules are not valid', { kind: 'exit', code: 64 });
  }
  const doveadm = (args: string[], input?: string) =>
    exec(cfg.doveadm, [...dovecotConf(cfg), 'sieve', ...args], { timeoutMs: 30_000, maxOutputBytes: 64 * 1024, signal: ctx.signal, ...(input === undefined ? {} : { input }) });
  try {
    // `put -a` compiles the script (a script Pigeonhole refuses is never stored) and makes it the active one.
    await doveadm(['put', '-u', user, '-a', PORTAL_SCRIPT], script);
    return { code: 0, stdout: '', stderr: '' };
  } catch (err) {
    if (!(err instanceof ExecError)) throw err;
    logExecOutput(ctx.log, 'sieve-put', err);
    const how = { kind: err.kind, ...(err.code === undefined ? {} : { code: err.code }) };
    if (err.kind === 'not-found') throw new ActionFailed(notInstalled('doveadm'), how);
    throw new ActionFailed(`doveadm sieve put did not store the script (${publicExecDetail(err)}); is dovecot-sieve installed and the sieve plugin set up (deploy/dovecot/conf.d/12-mailsvc-portal.conf)?`, how);
  }
}

export const MAILBOX_ACTIONS: readonly [string, ActionSpec][] = [
  [
    'doveadm-quota-get',
    { writes: () => [MAIL_HOMES],
      summary: "a mailbox's quota and usage as JSON (doveadm -f json quota get -u <user>); Dovecot may update the mailbox's index",
      params: [mailUser],
      command: ([user], cfg) => ({ file: cfg.doveadm, args: [...dovecotConf(cfg), '-f', 'json', 'quota', 'get', '-u', user ?? ''], timeoutMs: 30_000 }),
    },
  ],
  [
    'sieve-put',
    { writes: () => [MAIL_HOMES],
      summary: `store and activate a mailbox's self-service Sieve script "${PORTAL_SCRIPT}" (forwarding, out-of-office reply), rendered by the helper from <rules> (JSON, checked like the API checks them): doveadm sieve put -a`,
      params: [mailUser, sieveRules],
      maxArgLength: SIEVE_RULES_MAX,
      run: putSieve,
    },
  ],
];
