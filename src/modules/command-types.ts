import type { Command } from 'commander';
import type { Settings } from '../config/settings.js';

/**
 * Work a command starts from the settings alone, as soon as they are read, so
 * that it runs while the rest of the start-up loads (the infrastructure, the
 * module's code): a program whose output the command reads later. `fn` gets
 * what it returned; its `close` is called when the command ends, whether or
 * not `fn` used it (docs/performance.md, "An early start").
 */
export type EarlyStart<E extends { close(): void }> = (settings: Settings) => E;

/**
 * How a module's CLI command reaches its module: the composition root builds
 * the infrastructure and that one module when the command runs (never at
 * `--help`), hands it to `fn`, and closes what was opened afterwards. With
 * `early`, `fn` also gets what `early` started (undefined without it).
 */
export type Run<M> = <T, E extends { close(): void } = never>(fn: (module: M, early: E | undefined) => Promise<T>, early?: EarlyStart<E>) => Promise<T>;

/** A module's commands, added to the program before anything is built. */
export type ModuleCommands<M> = (program: Command, run: Run<M>) => void;

/** The command group `name` (`accounts`, …), made on first use, so several modules can add to it. */
export function commandGroup(program: Command, name: string, description: string): Command {
  return program.commands.find((c) => c.name() === name) ?? program.command(name).description(description);
}

/**
 * The audit log: every command that runs something (a command without
 * subcommands) is recorded — who, what, its target and options, the result —
 * unless its module marks it here. So a new command is audited unless someone
 * says otherwise, and docs/audit.md lists both kinds with the reasons.
 */
const NOT_AUDITED = new WeakMap<Command, string>();

/** What `readOnly` records as the reason. */
export const READS_ONLY = 'reads only';

function mark(program: Command, paths: readonly string[], why: string): void {
  for (const path of paths) {
    let cmd: Command | undefined = program;
    for (const name of path.split(' ')) cmd = cmd?.commands.find((c) => c.name() === name);
    if (!cmd) throw new Error(`no command "${path}" to mark as not audited`);
    if (cmd.commands.length > 0) throw new Error(`"${path}" is a group of commands: mark its commands`);
    NOT_AUDITED.set(cmd, why);
  }
}

/** The commands at these paths (`'domains list'`, from `program`) only read: not recorded in the audit log. */
export function readOnly(program: Command, paths: readonly string[]): void {
  mark(program, paths, READS_ONLY);
}

/** The commands at these paths change something but are not recorded; `why` says why (docs/audit.md shows it). */
export function notAudited(program: Command, paths: readonly string[], why: string): void {
  mark(program, paths, why);
}

/** Whether a run of this command is recorded in the audit log. */
export function isAudited(cmd: Command): boolean {
  return cmd.commands.length === 0 && !NOT_AUDITED.has(cmd);
}

/** Why a command is not recorded (`READS_ONLY` or a module's reason); undefined when it is. */
export function notAuditedBecause(cmd: Command): string | undefined {
  return NOT_AUDITED.get(cmd);
}
