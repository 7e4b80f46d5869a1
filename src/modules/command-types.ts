import type { Command } from 'commander';

/**
 * How a module's CLI command reaches its module: the composition root builds
 * the infrastructure and that one module when the command runs (never at
 * `--help`), hands it to `fn`, and closes what was opened afterwards.
 */
export type Run<M> = <T>(fn: (module: M) => Promise<T>) => Promise<T>;

/** A module's commands, added to the program before anything is built. */
export type ModuleCommands<M> = (program: Command, run: Run<M>) => void;

/** The command group `name` (`accounts`, …), made on first use, so several modules can add to it. */
export function commandGroup(program: Command, name: string, description: string): Command {
  return program.commands.find((c) => c.name() === name) ?? program.command(name).description(description);
}

/** Commands that change state: the CLI records each run of them in the audit log. */
const CHANGING = new WeakSet<Command>();

/** Marks the commands at these paths (`'domains delete'`, from `program`) as changing state. */
export function recordsChanges(program: Command, paths: string[]): void {
  for (const path of paths) {
    let cmd: Command | undefined = program;
    for (const name of path.split(' ')) cmd = cmd?.commands.find((c) => c.name() === name);
    if (!cmd) throw new Error(`recordsChanges: no command "${path}"`);
    CHANGING.add(cmd);
  }
}

export function changesState(cmd: Command): boolean {
  return CHANGING.has(cmd);
}
