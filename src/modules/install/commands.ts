import { resolve } from 'node:path';
import type { Command } from 'commander';
import { output } from '../../shared/terminal/output.js';
import { notAudited } from '../command-types.js';
import type { Run } from '../command-types.js';
import { AppError } from '../../shared/errors.js';
import type { InstallReport } from './installer.js';
import { describeWiring, WIRED_DAEMONS } from './wiring/index.js';
import type { WiredDaemon } from './wiring/index.js';

type Deps = { install(root: string, serviceUser?: string, wiring?: { dryRun: boolean; noWire: readonly WiredDaemon[] }): Promise<InstallReport>; uninstall(root: string): Promise<InstallReport> };

const describe = (r: InstallReport): string =>
  [
    ...r.done.map((l) => `done: ${l}`),
    ...r.skipped.map((l) => `skipped: ${l}`),
    ...(r.wiring ? [r.wiring.dryRun ? 'mail daemons (--dry-run: nothing changed):' : 'mail daemons:', ...describeWiring(r.wiring).map((l) => `  ${l}`)] : []),
    ...r.left.map((l) => `left for you: ${l}`),
  ].join('\n');

/** --no-wire's values, each a daemon install wires. */
function noWire(values: readonly string[]): WiredDaemon[] {
  for (const v of values) {
    if (!(WIRED_DAEMONS as readonly string[]).includes(v)) throw new AppError('bad_request', `--no-wire ${v}: not a daemon mailsvc install wires (one of ${WIRED_DAEMONS.join(', ')})`);
  }
  return values as WiredDaemon[];
}

/** `mailsvc install [--root DIR] [--service-user NAME]`, `mailsvc uninstall [--root DIR]`. */
export function installCommands(program: Command, run: Run<Deps>): void {
  program
    .command('install')
    .description('set this host up (root, Debian 12): user, directories, settings file, systemd units and timers per the switches, helper socket, migrations, and the installed mail daemons wired to mailsvc (Postfix, Dovecot, Rspamd, nginx, fail2ban, postsrsd, nftables); safe to re-run (re-renders the timers, wires a daemon installed since)')
    .option('--root <dir>', 'render every file under this directory instead, and run nothing (for inspection)')
    .option('--service-user <name>', 'the user the service runs as (default mailsvc, the only one on the host); with --root the owners are set for it when it exists', 'mailsvc')
    .option('--dry-run', 'change nothing: print, per mail daemon, what wiring it to mailsvc would change (a diff per file)')
    .option('--no-wire <daemon>', `leave this mail daemon as it is (repeatable; ${WIRED_DAEMONS.join(', ')})`, (v: string, all: string[]) => [...all, v], [] as string[])
    .option('--json', 'print what was done as JSON')
    .action(async (opts: { root?: string; serviceUser: string; json?: boolean; dryRun?: boolean; wire?: string[] | false }) => {
      const wiring = { dryRun: opts.dryRun === true, noWire: noWire(Array.isArray(opts.wire) ? opts.wire : []) };
      const report = await run((m) => m.install(opts.root ? resolve(opts.root) : '/', opts.serviceUser, wiring));
      output(opts.json, report, () => describe(report));
    });
  program
    .command('uninstall')
    .description('remove what mailsvc install made (units, the command link, the releases) and keep the data and settings')
    .option('--root <dir>', 'act on a tree rendered with install --root')
    .option('--json', 'print what was done as JSON')
    .action(async (opts: { root?: string; json?: boolean }) => {
      const report = await run((m) => m.uninstall(opts.root ? resolve(opts.root) : '/'));
      output(opts.json, report, () => describe(report));
    });
  // install runs before there is a database to hold the record (it makes it), uninstall keeps it but
  // stops the service; the printed report is the record.
  notAudited(program, ['install', 'uninstall'], 'sets the host up before there is a database to record in, or stops the service it would record through; the printed report is the record');
}
