import type { Command } from 'commander';
import { output } from '../../shared/terminal/output.js';
import { sortOption, table } from '../../shared/terminal/options.js';
import { readOnly } from '../command-types.js';
import type { Run } from '../command-types.js';
import type { BanService } from './ban.service.js';
import { sshCaller } from '../../shared/ssh-caller.js';
import type { BanView } from './schema.js';
import { BAN_SORT } from './schema.js';

const when = (iso: string | null): string => (iso === null ? '-' : iso.replace('T', ' ').replace(/\.\d+Z$/, 'Z'));

const describe = (b: BanView): string =>
  [`Banned ${b.ip} in ${b.jails.join(', ')}`, `  reason:  ${b.reason ?? '-'}`, `  since:   ${when(b.banned_at)}`, `  expires: ${when(b.expires_at)}`].join('\n');

/** `mailsvc bans list|ban|unban`. */
export function banCommands(program: Command, run: Run<{ service: BanService }>): void {
  const bans = program.command('bans').description("addresses fail2ban bans (every jail), and manual bans");

  sortOption(bans.command('list').description('list banned addresses, one line per address with every jail that holds it'), BAN_SORT, 'address (IPv4 first)')
    .option('--search <text>', 'only the addresses that contain this text')
    .option('--jail <name>', 'only the bans this jail holds')
    .option('--json', 'print the bans as a JSON array')
    .action(async (opts: { json?: boolean; sort?: string; search?: string; jail?: string }) => {
      const all = await run((m) => m.service.listAll(opts.sort, { q: opts.search, jail: opts.jail }));
      output(opts.json, all, () =>
        all.length === 0
          ? opts.search !== undefined || opts.jail !== undefined ? 'No ban matches. Try mailsvc bans list without --search or --jail' : 'No address is banned.'
          : table(['ip', 'jails', 'reason', 'since', 'expires'], all.map((b) => [b.ip, b.jails.join(','), b.reason ?? '-', when(b.banned_at), when(b.expires_at)])),
      );
    });

  bans
    .command('ban')
    .description("ban an address or network (no wider than /24 or /64) in every active jail; loopback, this host, trusted proxies, fail2ban's ignoreip and your own SSH address are refused")
    .argument('<ip>', 'IPv4 or IPv6 address, or a CIDR network')
    .argument('<reason>', 'why (kept by mailsvc, shown by bans list)')
    .option('--json', 'print the ban as JSON')
    .action(async (ip: string, reason: string, opts: { json?: boolean }) => {
      const ban = await run((m) => m.service.ban(ip, reason, { subject: 'cli', address: sshCaller(process.env) }));
      output(opts.json, ban, () => describe(ban));
    });

  bans
    .command('unban')
    .description('lift a ban in every jail that holds it (exit 4 when no jail does)')
    .argument('<ip>', 'the banned address or network')
    .option('--json', 'print the result as JSON')
    .action(async (ip: string, opts: { json?: boolean }) => {
      const r = await run((m) => m.service.unban(ip));
      output(opts.json, { ok: true, ...r }, () => `Unbanned ${r.ip} in ${r.jails.join(', ')}.`);
    });
  readOnly(program, ['bans list']);
}
