import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ExecError, exec } from '../adapters/exec.js';
import type { HelperResult } from '../adapters/helper-client.js';
import { compileRuleset } from '../shared/firewall-rules.js';
import type { FirewallState } from '../shared/firewall-rules.js';
import type { HelperConfig, RunContext } from './action-types.js';
import { ActionFailed, logExecOutput, publicExecDetail } from './failure.js';
import { notInstalled } from '../shared/daemon-hints.js';

/**
 * `firewall-apply <state>` (the state checked by firewall-param.ts): the
 * helper renders mailsvc's table itself; no caller text reaches nft.
 */

/** nft's time for a check or an apply. */
const NFT_TIMEOUT_MS = 30_000;

/**
 * Renders the table, writes it to a private copy (a new 0700 directory in the
 * helper's private /tmp, the file 0600), `nft -c -f` then `nft -f` (one
 * transaction: the running ruleset changes whole or not at all), removes the
 * copy. A refusal is a fixed sentence; nft's output goes to the helper's log.
 */
export async function applyFirewall([raw = '']: readonly string[], cfg: HelperConfig, ctx: RunContext): Promise<HelperResult> {
  const state = JSON.parse(raw) as FirewallState;
  const text = compileRuleset(cfg.nftTable, state);
  const dir = await mkdtemp(join(tmpdir(), 'mailsvc-nft-'));
  try {
    const copy = join(dir, 'ruleset.nft');
    await writeFile(copy, text, { mode: 0o600, flag: 'wx' });
    const nft = (args: string[]) => exec('nft', [...args, '-f', copy], { timeoutMs: NFT_TIMEOUT_MS, maxOutputBytes: 1024 * 1024, signal: ctx.signal });
    try {
      await nft(['-c']);
      return await nft([]);
    } catch (err) {
      if (!(err instanceof ExecError)) throw err;
      logExecOutput(ctx.log, 'firewall-apply', err);
      const how = { kind: err.kind, ...(err.code === undefined ? {} : { code: err.code }) };
      if (err.kind === 'exit') throw new ActionFailed(`nft refused the rendered ruleset (exit ${err.code ?? '?'}); the running ruleset is unchanged`, how);
      if (err.kind === 'not-found') throw new ActionFailed(`${notInstalled('nft')}; the running ruleset is unchanged`, how);
      throw new ActionFailed(`nft did not finish (${publicExecDetail(err)}); nft applies a ruleset whole or not at all`, how);
    }
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
