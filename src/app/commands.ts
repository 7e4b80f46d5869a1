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

/** Adds every module's commands (its manifest's `commands`), in the order of the module list. */
export async function addModuleCommands(program: Command, given?: readonly AnyModuleManifest[]): Promise<void> {
  const list = given ?? (await loadModuleList());
  for (const m of list) (m.commands as ((p: Command, cli: CommandKit<unknown>) => void) | undefined)?.(program, commandKit(m.name));
}
