import { spawn } from 'node:child_process';
import type { Command } from 'commander';
import { CliError, output } from '../../shared/terminal/output.js';
import { table } from '../../shared/terminal/options.js';
import { sshCaller } from '../../shared/ssh-caller.js';
import { readOnly } from '../command-types.js';
import type { Run } from '../command-types.js';
import type { FirewallService, FirewallView, RevertScheduler } from './firewall.service.js';

const KEYS = ['firewall-enabled', 'firewall-rules-json'] as const;

const describe = (v: FirewallView): string =>
  [
    `Firewall: ${v['firewall-enabled'] === 'yes' ? 'enabled' : 'disabled'}`,
    v['firewall-rules-json'].length === 0
      ? 'No rules.'
      : table(['#', 'ports', 'protocol', 'source', 'enabled'], v['firewall-rules-json'].map((r, i) => [String(i), r.ports, r.protocol, r.source || 'any', r.enabled])),
    ...(v.confirm_by ? [`A forced change reverts at ${v.confirm_by} unless you run: mailsvc firewall confirm`] : []),
  ].join('\n');

/**
 * The revert of a forced change must happen even after this command exits:
 * a detached `mailsvc firewall revert-unconfirmed <id> --after <s>` process.
 */
const detachedRevert: RevertScheduler = (id, seconds) => {
  const script = process.argv[1];
  if (!script) throw new CliError('cannot find the mailsvc program to schedule the revert', 1);
  spawn(process.execPath, [script, 'firewall', 'revert-unconfirmed', id, '--after', String(seconds)], { detached: true, stdio: 'ignore', env: process.env }).unref();
};

/** `mailsvc firewall show|set|confirm`. */
export function firewallCommands(program: Command, run: Run<{ service: FirewallService }>): void {
  const fw = program.command('firewall').description("the firewall: mailsvc's own nftables table (MAILSVC_NFT_TABLE)");

  fw.command('show')
    .description('show whether the firewall is on and its rules')
    .option('--json', 'print it as JSON')
    .action(async (opts: { json?: boolean }) => {
      const v = await run((m) => m.service.get());
      output(opts.json, v, () => describe(v));
    });

  fw.command('set')
    .description('change a firewall key and apply: firewall-enabled yes|no, or firewall-rules-json \'[{"ports":"ssh mail","protocol":"tcp","source":"","enabled":"yes"}]\'')
    .argument('<key>', KEYS.join(' | '))
    .argument('<value>', 'yes|no, or a JSON array of rules')
    .option('--force', 'apply even if it closes SSH or the API to your SSH address; it reverts unless confirmed in time')
    .option('--json', 'print the result as JSON')
    .action(async (key: string, value: string, opts: { force?: boolean; json?: boolean }) => {
      if (!(KEYS as readonly string[]).includes(key)) throw new CliError(`unknown firewall key "${key.slice(0, 40)}"; use ${KEYS.join(' or ')}`, 2);
      let parsed: unknown = value;
      if (key === 'firewall-rules-json') {
        try {
          parsed = JSON.parse(value);
        } catch {
          throw new CliError('firewall-rules-json: the value is not JSON', 2);
        }
      }
      const ssh = sshCaller(process.env);
      const v = await run((m) => m.service.set({ [key]: parsed }, ssh === null ? null : { address: ssh, via: 'ssh' }, opts.force === true, detachedRevert));
      output(opts.json, v, () => `Applied.\n${describe(v)}`);
    });

  fw.command('confirm')
    .description('keep a forced change (otherwise it reverts by itself)')
    .option('--json', 'print the result as JSON')
    .action(async (opts: { json?: boolean }) => {
      const v = await run((m) => m.service.confirm());
      output(opts.json, v, () => `Confirmed.\n${describe(v)}`);
    });

  fw.command('revert-unconfirmed', { hidden: true })
    .argument('<id>')
    .option('--after <seconds>', 'wait this long first', '0')
    .action(async (id: string, opts: { after: string }) => {
      await new Promise((r) => setTimeout(r, Math.max(0, Number(opts.after) || 0) * 1000));
      const done = await run((m) => m.service.revertUnconfirmed(id));
      output(false, null, () => (done ? 'Reverted the unconfirmed firewall change.' : 'Nothing to revert.'));
    });
  readOnly(program, ['firewall show']);
}
