import { resolve } from 'node:path';
import type { Command } from 'commander';
import { output } from '../../shared/terminal/output.js';
import { notAudited } from '../command-types.js';
import type { Run } from '../command-types.js';
import type { InstallReport } from './installer.js';

type Deps = { install(root: string, serviceUser?: string): Promise<InstallReport>; uninstall(root: string): Promise<InstallReport> };

const describe = (r: InstallReport): string =>
  [...r.done.map((l) => `done: ${l}`), ...r.skipped.map((l) => `skipped: ${l}`), ...r.left.map((l) => `left for you: ${l}`)].join('\n');

/** `mailsvc install [--root DIR] [--service-user NAME]`, `mailsvc uninstall [--root DIR]`. */
export function installCommands(program: Command, run: Run<Deps>): void {
  program
    .command('install')
    .description('set this host up (root, Debian 12): user, directories, settings file, systemd units and timers per the switches, helper socket, migrations; safe to re-run (re-renders the timers)')
    .option('--root <dir>', 'render every file under this directory instead, and run nothing (for inspection)')
    .option('--service-user <name>', 'the user the service runs as (default mailsvc, the only one on the host); with --root the owners are set for it when it exists', 'mailsvc')
    .option('--json', 'print what was done as JSON')
    .action(async (opts: { root?: string; serviceUser: string; json?: boolean }) => {
      const report = await run((m) => m.install(opts.root ? resolve(opts.root) : '/', opts.serviceUser));
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
