import type { Command } from 'commander';
import { ACTIONS } from '../../helper/actions.js';

export function helperCommands(program: Command): void {
  const helper = program.command('helper').description('the privileged helper that does root work for the service (docs/helper.md)');
  helper
    .command('serve')
    .description('run the helper (as root): on the socket systemd passes in, else on the MAILSVC_HELPER socket')
    .action(async () => (await import('./helper-run.js')).serveHelper());
  helper
    .command('run')
    .description(`run one helper action through MAILSVC_HELPER (actions: ${[...ACTIONS.keys()].join(', ')})`)
    .argument('<action>')
    .argument('[args...]')
    .option('--json', 'print the result as JSON')
    .action(async (action: string, args: string[], opts: { json?: boolean }) => (await import('./helper-run.js')).runHelperAction(action, args, opts));
}
