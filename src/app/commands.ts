import type { Command } from 'commander';
import type { AnyModuleManifest, CommandKit, ModuleName } from '../modules/module-types.js';
import { runModule, runModuleIfMigrated } from './cli-runner.js';
import { loadModuleList } from './module-list.js';

/** The ways one module's commands reach it when they run (cli-runner.ts). */
function commandKit(name: ModuleName): CommandKit<unknown> {
  return {
    run: (opts) => runModule((m) => m.get(name), opts),
    runWith: (pick, opts) => runModule(pick, opts),
    runIfMigrated: (pick, opts) => runModuleIfMigrated(pick, opts),
  };
}

/** The commands that run something (no subcommands) under `cmd`. */
export function leafCommands(cmd: Command): Command[] {
  return cmd.commands.flatMap((c) => (c.commands.length === 0 ? [c] : leafCommands(c)));
}

/**
 * Adds every module's commands (its manifest's `commands`), in the order of
 * the module list; `owners`, when given, learns which module added each
 * command (the generated docs link its page).
 */
export async function addModuleCommands(program: Command, opts: { list?: readonly AnyModuleManifest[]; owners?: Map<Command, AnyModuleManifest> } = {}): Promise<void> {
  const list = opts.list ?? (await loadModuleList());
  for (const m of list) {
    const before = new Set(opts.owners ? leafCommands(program) : []);
    (m.commands as ((p: Command, cli: CommandKit<unknown>) => void) | undefined)?.(program, commandKit(m.name));
    for (const c of opts.owners ? leafCommands(program) : []) if (!before.has(c)) opts.owners?.set(c, m);
  }
}
