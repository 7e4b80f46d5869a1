import { Help } from 'commander';
import type { Command } from 'commander';
import type { AnyModuleManifest } from '../modules/module-types.js';

/**
 * The top-level commands of the full program, in their order, with what
 * `mailsvc --help` shows for each and the modules that add commands under it
 * (their places in the module list; none for the program's own: serve, db,
 * secrets, helper). `npm run build` writes it next to the bundle
 * (dist/bundle/command-index.json) from the program it bundles, so a command
 * builds the definitions of its own modules only and the others' lines of the
 * help come from here (docs/performance.md).
 */
export type CommandIndexEntry = {
  name: string;
  /** As the parent's help lists it: `install [options]`, `domains`. */
  term: string;
  description: string;
  hidden: boolean;
  /** Places in the module list (src/app/module-list.ts) of the modules with commands under it. */
  modules: number[];
};
export type CommandIndex = { commands: CommandIndexEntry[] };

/** The leaf commands under `cmd` (itself when it has none). */
function leaves(cmd: Command): Command[] {
  return cmd.commands.length === 0 ? [cmd] : cmd.commands.flatMap(leaves);
}

/** The index of a full program; `owners` and `list` as `buildProgram({ owners })` and `loadModuleList()` gave them. */
export function commandIndexOf(program: Command, owners: ReadonlyMap<Command, AnyModuleManifest>, list: readonly AnyModuleManifest[]): CommandIndex {
  const help = new Help();
  const visible = new Set(help.visibleCommands(program));
  return {
    commands: program.commands.map((c) => {
      const places = new Set<number>();
      for (const leaf of leaves(c)) {
        const owner = owners.get(leaf);
        if (owner) places.add(list.indexOf(owner));
      }
      return { name: c.name(), term: help.subcommandTerm(c), description: help.subcommandDescription(c), hidden: !visible.has(c), modules: [...places].sort((a, b) => a - b) };
    }),
  };
}

/** A command index read from JSON, or null when it is not one (then the whole program is built). */
export function parseCommandIndex(text: string): CommandIndex | null {
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch {
    return null;
  }
  const commands = (v as { commands?: unknown } | null)?.commands;
  if (!Array.isArray(commands)) return null;
  const ok = commands.every((c: unknown) => {
    const e = c as Partial<CommandIndexEntry> | null;
    return (
      typeof e?.name === 'string' && typeof e.term === 'string' && typeof e.description === 'string' && typeof e.hidden === 'boolean' &&
      Array.isArray(e.modules) && e.modules.every((m) => Number.isInteger(m) && m >= 0)
    );
  });
  return ok ? { commands: commands as CommandIndexEntry[] } : null;
}

const PROGRAM_FLAGS = new Set(['-h', '--help', '-V', '--version']);

/**
 * Which top-level command these arguments (after `node mailsvc.js`) run:
 * its name; '' when they only ask for the program's help or version (no
 * command is built); undefined when that is not plain (an unknown command, an
 * option first): then the whole program is built and commander decides, as
 * before.
 */
export function commandOf(args: readonly string[], index: CommandIndex): string | undefined {
  const known = (name: string | undefined): string | undefined => (name !== undefined && index.commands.some((c) => c.name === name) ? name : undefined);
  const [first, second] = args;
  if (first === undefined) return '';
  if (PROGRAM_FLAGS.has(first)) return args.length === 1 ? '' : undefined;
  if (first === 'help') return second === undefined ? '' : args.length === 2 ? known(second) : undefined;
  return known(first);
}
