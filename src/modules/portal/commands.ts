import type { Command } from 'commander';
import { badRequest } from '../../shared/errors.js';
import { output } from '../../shared/terminal/output.js';
import { commandGroup, readOnly } from '../command-types.js';
import type { Run } from '../command-types.js';
import type { PortalAccessService } from './access.service.js';

type Deps = { access: PortalAccessService };

/** `mailsvc portal list|enable|disable`: where mailbox users may help themselves (the user portal). */
export function portalCommands(program: Command, run: Run<Deps>): void {
  const portal = commandGroup(program, 'portal', 'the mailbox self-service portal (MAILSVC_ENABLE_USER_PORTAL)');

  portal
    .command('list')
    .description('the domains and mailboxes whose users the portal refuses')
    .option('--json', 'print them as JSON ({ disabled_domains, disabled_mailboxes })')
    .action(async (opts: { json?: boolean }) => {
      const v = await run((m) => m.access.list());
      output(opts.json, v, () =>
        v.disabled_domains.length + v.disabled_mailboxes.length === 0
          ? 'Self-service is on for every domain and mailbox (when MAILSVC_ENABLE_USER_PORTAL=yes).'
          : [...v.disabled_domains.map((d) => `domain   ${d}  off`), ...v.disabled_mailboxes.map((a) => `mailbox  ${a}  off`)].join('\n'),
      );
    });

  for (const [verb, on] of [['enable', true], ['disable', false]] as const) {
    portal
      .command(verb)
      .description(`${on ? 'allow' : 'refuse'} self-service for a domain or a mailbox${on ? '' : ' (its open portal sessions end at their next request)'}`)
      .option('--domain <name>', 'a domain: every mailbox in it')
      .option('--mailbox <address>', 'one mailbox')
      .option('--json', 'print the result as JSON')
      .action(async (opts: { domain?: string; mailbox?: string; json?: boolean }) => {
        if ((opts.domain === undefined) === (opts.mailbox === undefined)) {
          throw badRequest(`give exactly one of --domain <name> or --mailbox <address> (see mailsvc portal ${verb} --help)`);
        }
        const r = await run((m) => (opts.domain !== undefined ? m.access.setDomain(opts.domain, on) : m.access.setMailbox(opts.mailbox ?? '', on)));
        output(opts.json, r, () => `Self-service ${on ? 'on' : 'off'} for ${r.name}${r.changed ? '' : ' (it already was)'}.`);
      });
  }
  readOnly(program, ['portal list']);
}
