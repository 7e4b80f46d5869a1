import type { Command } from 'commander';
import { WINDOWS } from '../../shared/send-rate.js';
import { output } from '../../shared/terminal/output.js';
import { commandGroup } from '../command-types.js';
import type { Run } from '../command-types.js';
import type { SendLimitsService } from './send-limits.service.js';

type Deps = { service: SendLimitsService; target: string };

/** `mailsvc accounts sync-send-limits`. */
export function sendLimitCommands(program: Command, run: Run<Deps>): void {
  commandGroup(program, 'accounts', 'mailboxes')
    .command('sync-send-limits')
    .description("push every account's effective send limits to the map the policy service reads (after changing MAILSVC_SEND_RATE_*)")
    .option('--json', 'print the result as JSON')
    .action(async (opts: { json?: boolean }) => {
      const result = await run(async (m) => ({ ...(await m.service.syncAll()), written_to: m.target }));
      output(opts.json, result, () =>
        `Send limits of ${result.accounts} account(s) written to ${result.written_to}.\n` +
        `Global defaults (MAILSVC_SEND_RATE_*; 0 = no limit): ${WINDOWS.map((w) => `${w.replace('_', ' ')} ${result.defaults[w]}`).join(', ')}`,
      );
    });
}
