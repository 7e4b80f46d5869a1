import type { Command } from 'commander';
import { SEND_RATE_FIELDS, WINDOWS, effectiveLimits, sendRateField } from '../../shared/send-rate.js';
import type { Limits, SendRateField } from '../../shared/send-rate.js';
import { normalizeAddress } from '../../shared/mail-names.js';
import type { Page } from '../../shared/paging.js';
import { CliError, output } from '../../shared/terminal/output.js';
import { byteSize, confirm, formatBytes, pageNote, pageOf, pagingOptions, readNewPassword, sortOption, table, wholeNumber, yesNo } from '../../shared/terminal/options.js';
import { commandGroup, readOnly } from '../command-types.js';
import type { Run } from '../command-types.js';
import type { DomainLookup } from '../domains/index.js';
import type { AccountService } from './account.service.js';
import { MAX_SEND_RATE } from '../../shared/send-rate.js';
import { MAX_QUOTA_BYTES } from './quota.js';
import type { AccountPatch, AccountView } from './schema.js';
import { ACCOUNT_SORT } from './schema.js';

/** A quota for people: 0 is no quota. */
const quota = (n: number): string => (n === 0 ? 'none' : formatBytes(n));

type Deps = { service: AccountService; domains: DomainLookup; sendRateDefaults: () => Limits };

const yn = (b: boolean): string => (b ? 'yes' : 'no');
const perWindow = (n: number): string => (n === 0 ? 'no limit' : String(n));
/** `send_rate_per_minute` ↔ `--send-rate-per-minute` ↔ commander's `sendRatePerMinute`. */
const rateFlag = (f: SendRateField): string => `--${f.replace(/_/g, '-')}`;
const rateKey = (f: SendRateField): string => f.replace(/_([a-z])/g, (_m, c: string) => c.toUpperCase());


function describeAccount(a: AccountView, effective: Limits): string {
  return [
    `Account ${a.address} (id ${a.id})`,
    `  name:                ${a.display_name || '-'}`,
    `  quota:               ${quota(a.quota_bytes)}`,
    `  active:              ${yn(a.active)}`,
    `  app passwords only:  ${yn(a.require_app_password)}`,
    `  created:             ${a.created_at}`,
    `  updated:             ${a.updated_at}`,
    '  send limits (0 on the account = the global default):',
    ...table(
      ['window', 'account', 'effective'],
      WINDOWS.map((w) => [w.replace('_', ' '), String(a[sendRateField(w)]), perWindow(effective[w])]),
    )
      .split('\n')
      .map((l) => `    ${l}`),
  ].join('\n');
}

type SetOptions = { name?: string; quota?: number; active?: boolean; requireAppPassword?: boolean; json?: boolean } & Record<string, unknown>;

function patchOf(opts: SetOptions): AccountPatch {
  const patch: AccountPatch = {};
  if (opts.name !== undefined) patch.display_name = opts.name;
  if (opts.quota !== undefined) patch.quota_bytes = opts.quota;
  if (opts.active !== undefined) patch.active = opts.active;
  if (opts.requireAppPassword !== undefined) patch.require_app_password = opts.requireAppPassword;
  for (const f of SEND_RATE_FIELDS) {
    const v = opts[rateKey(f)];
    if (typeof v === 'number') patch[f] = v;
  }
  return patch;
}

const QUOTA_HELP = 'mailbox quota (the API\'s quota_bytes): bytes or 512M, 2G, 1T (0 = no quota)';

/** `mailsvc accounts …`: mailboxes, their passwords, app passwords and send limits. */
export function accountCommands(program: Command, run: Run<Deps>): void {
  const accounts = commandGroup(program, 'accounts', 'mailboxes: add, list, show, set, passwd, delete, app-passwords, sync-send-limits');

  accounts
    .command('add')
    .description('add a mailbox; asks its password twice without echo')
    .argument('<address>', 'e.g. alice@example.org (its domain must exist)')
    .option('--name <display>', 'display name (the API\'s display_name)')
    .option('--quota <size>', QUOTA_HELP, byteSize(MAX_QUOTA_BYTES))
    .option('--require-app-password', 'IMAP, POP and SMTP accept only app passwords, not the account password')
    .option('--inactive', 'create it switched off (no login, no delivery)')
    .option('--password-stdin', 'read the password from the first line of standard input instead of asking')
    .option('--json', 'print the account as JSON')
    .action(async (address: string, opts: SetOptions & { inactive?: boolean; passwordStdin?: boolean }) => {
      const account = await run(async (m) => {
        // Fail on a bad address or unknown domain before asking for a password.
        if (!opts.passwordStdin) await m.domains.requireExisting(normalizeAddress(address).domain);
        const password = await readNewPassword(opts.passwordStdin, address);
        return m.service.create({
          address,
          password,
          ...(opts.name === undefined ? {} : { display_name: opts.name }),
          ...(opts.quota === undefined ? {} : { quota_bytes: opts.quota }),
          active: !opts.inactive,
          require_app_password: opts.requireAppPassword === true,
        });
      });
      output(opts.json, account, () => `Account ${account.address} added (id ${account.id}${account.active ? '' : ', inactive'}).`);
    });

  sortOption(pagingOptions(accounts.command('list').description('list the mailboxes, by address')), ACCOUNT_SORT, 'address')
    .option('--domain <domain>', 'only the accounts of this domain (name or id)')
    .option('--json', 'print the page as JSON ({ items, total, limit, offset })')
    .action(async (opts: Page & { domain?: string; json?: boolean; sort?: string }) => {
      const page = await run((m) => m.service.list(opts.domain === undefined ? {} : { domain: opts.domain }, pageOf(opts), opts.sort));
      output(opts.json, page, () =>
        page.total === 0
          ? 'No accounts. Add one with: mailsvc accounts add alice@example.org'
          : table(
              ['address', 'name', 'quota', 'active', 'app-pw-only'],
              page.items.map((a) => [a.address, a.display_name, quota(a.quota_bytes), yn(a.active), yn(a.require_app_password)]),
            ) + pageNote(page),
      );
    });

  accounts
    .command('show')
    .description('show one mailbox, with its effective send limits')
    .argument('<account>', 'its address or id')
    .option('--json', 'print it as JSON')
    .action(async (idOrAddress: string, opts: { json?: boolean }) => {
      const { account, effective } = await run(async (m) => {
        const account = await m.service.get(idOrAddress);
        return { account, effective: effectiveLimits(account, m.sendRateDefaults()) };
      });
      output(opts.json, { ...account, effective_send_limits: effective }, () => describeAccount(account, effective));
    });

  const set = accounts
    .command('set')
    .description('change a mailbox; only the options given change')
    .argument('<account>', 'its address or id')
    .option('--name <display>', 'display name, the API\'s display_name ("" to clear)')
    .option('--quota <size>', QUOTA_HELP, byteSize(MAX_QUOTA_BYTES))
    .option('--active <yes|no>', 'switch it on or off (off ends its open sessions)', yesNo)
    .option('--require-app-password <yes|no>', 'accept only app passwords for IMAP, POP and SMTP', yesNo);
  for (const f of SEND_RATE_FIELDS) {
    const window = f.slice('send_rate_'.length).replace('_', ' ');
    set.option(`${rateFlag(f)} <n>`, `messages ${window === 'burst' ? 'in any 10 seconds' : window} (0 = the global default)`, wholeNumber(0, MAX_SEND_RATE));
  }
  set.option('--json', 'print the account as JSON').action(async (idOrAddress: string, opts: SetOptions) => {
    const patch = patchOf(opts);
    if (Object.keys(patch).length === 0) {
      const flags = ['--name', '--quota', '--active', '--require-app-password', ...SEND_RATE_FIELDS.map(rateFlag)];
      throw new CliError(`nothing to change: give one or more of ${flags.join(', ')}`, 2);
    }
    const account = await run((m) => m.service.update(idOrAddress, patch));
    output(opts.json, account, () => `Account ${account.address} updated.`);
  });

  accounts
    .command('passwd')
    .description('set a new password for a mailbox (asked twice without echo) and end its open sessions (IMAP, POP, portal)')
    .argument('<account>', 'its address or id')
    .option('--password-stdin', 'read the password from the first line of standard input instead of asking')
    .option('--revoke-app-passwords', 'revoke every app password of the mailbox too (a reset after a compromise)')
    .option('--json', 'print the result as JSON')
    .action(async (idOrAddress: string, opts: { passwordStdin?: boolean; revokeAppPasswords?: boolean; json?: boolean }) => {
      const revoke = opts.revokeAppPasswords === true;
      const account = await run(async (m) => {
        const { address } = await m.service.get(idOrAddress);
        return m.service.setPassword(address, await readNewPassword(opts.passwordStdin, address), { revokeAppPasswords: revoke });
      });
      output(opts.json, { ok: true, id: account.id, address: account.address }, () =>
        `Password of ${account.address} changed${revoke ? ' and every app password revoked' : ''}; its portal sessions ended, and doveadm was asked to end its open IMAP and POP sessions.`,
      );
    });

  accounts
    .command('delete')
    .description('delete a mailbox record and its app passwords (the mail files stay on disk)')
    .argument('<account>', 'its address or id')
    .option('--yes', 'do not ask for confirmation')
    .option('--json', 'print the result as JSON')
    .action(async (idOrAddress: string, opts: { yes?: boolean; json?: boolean }) => {
      const address = await run(async (m) => {
        const { address } = await m.service.get(idOrAddress);
        await confirm(opts.yes, `Delete the account ${address} and its app passwords?`, `not deleting ${address}`);
        await m.service.delete(address);
        return address;
      });
      output(opts.json, { ok: true, deleted: address }, () => `Account ${address} deleted.`);
    });
  readOnly(program, ['accounts list', 'accounts show']);
}
