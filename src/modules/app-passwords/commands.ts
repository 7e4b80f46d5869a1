import type { Command } from 'commander';
import { output } from '../../shared/terminal/output.js';
import { day, table } from '../../shared/terminal/options.js';
import { commandGroup, readOnly } from '../command-types.js';
import type { Run } from '../command-types.js';
import type { AccountLookup } from '../accounts/index.js';
import type { AppPasswordService } from './app-password.service.js';

type Deps = { service: AppPasswordService; accounts: AccountLookup };

/** `mailsvc accounts app-passwords add|list|revoke`: per-device passwords for IMAP, POP and SMTP. */
export function appPasswordCommands(program: Command, run: Run<Deps>): void {
  const accounts = commandGroup(program, 'accounts', 'mailboxes');
  const appPasswords = accounts.command('app-passwords').description("an account's app passwords (one per mail client)");

  appPasswords
    .command('add')
    .description('make an app password; it is printed once and cannot be shown again')
    .argument('<account>', 'the address or id of the account')
    .requiredOption('--name <name>', 'what it is for, e.g. "Thunderbird on laptop"')
    .option('--expires <time>', 'ISO 8601 time after which it stops working, e.g. 2027-01-31T00:00:00Z')
    .option('--json', 'print it as JSON (the only place the password appears)')
    .action(async (account: string, opts: { name: string; expires?: string; json?: boolean }) => {
      const created = await run((m) =>
        m.service.create(account, { name: opts.name, ...(opts.expires === undefined ? {} : { expires_at: opts.expires }) }),
      );
      output(opts.json, created, () =>
        [
          `App password "${created.name}" (id ${created.id})${created.expires_at ? `, valid until ${created.expires_at}` : ''}:`,
          '',
          `    ${created.password}`,
          '',
          'Enter it in the mail client now: it is stored only as a hash and will not be shown again.',
        ].join('\n'),
      );
    });

  appPasswords
    .command('list')
    .description("list an account's app passwords that are not revoked (never the passwords themselves)")
    .argument('<account>', 'the address or id of the account')
    .option('--json', 'print them as JSON ({ account, items })')
    .action(async (account: string, opts: { json?: boolean }) => {
      const { address, items } = await run(async (m) => ({
        address: (await m.accounts.resolve(account)).address,
        items: await m.service.list(account),
      }));
      output(opts.json, { account: address, items }, () =>
        items.length === 0
          ? `${address} has no app passwords. Make one with: mailsvc accounts app-passwords add ${address} --name "…"`
          : table(
              ['id', 'name', 'created', 'expires', 'last used', 'from', 'active'],
              items.map((p) => [p.id, p.name, day(p.created_at), day(p.expires_at), day(p.last_used_at), p.last_used_ip ?? '-', p.active ? 'yes' : 'no']),
            ),
      );
    });

  appPasswords
    .command('revoke')
    .description("revoke an app password and end the account's open IMAP and POP sessions")
    .argument('<account>', 'the address or id of the account')
    .argument('<id>', 'the app password id (from the list)')
    .option('--json', 'print the result as JSON')
    .action(async (account: string, id: string, opts: { json?: boolean }) => {
      const address = await run(async (m) => {
        await m.service.revoke(account, id);
        return (await m.accounts.resolve(account)).address;
      });
      output(opts.json, { ok: true, revoked: id, account: address }, () => `App password ${id} of ${address} revoked.`);
    });
  readOnly(program, ['accounts app-passwords list']);
}
