import type { Command, CommanderError } from 'commander';
import { CliError } from './output.js';

const PASS_THROUGH = new Set(['commander.help', 'commander.helpDisplayed', 'commander.version']);

function commandPath(cmd: Command): string {
  const names: string[] = [];
  for (let c: Command | null = cmd; c; c = c.parent) names.unshift(c.name());
  return names.join(' ');
}

/**
 * Commander's own usage errors (unknown option, missing argument, a number
 * that is not one) leave like every other error: one `mailsvc: …` line from
 * fail(), exit 2, and a pointer to the command's help instead of the help.
 */
export function oneLineUsageErrors(cmd: Command): void {
  cmd
    .showHelpAfterError(false)
    .configureOutput({ outputError: () => undefined })
    .exitOverride((err: CommanderError) => {
      if (PASS_THROUGH.has(err.code)) process.exit(err.exitCode);
      throw new CliError(`${err.message.replace(/^error: /, '')} (see ${commandPath(cmd)} --help)`, 2);
    });
  for (const sub of cmd.commands) oneLineUsageErrors(sub);
}
