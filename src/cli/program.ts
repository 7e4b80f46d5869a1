import { Command, Help } from 'commander';
import { addModuleCommands } from '../app/commands.js';
import { loadModules } from '../app/module-list.js';
import { SERVICE_VERSION } from '../shared/version.js';
import { dbCommands } from './commands/db.js';
import { secretsCommands } from './commands/secrets.js';
import { oneLineUsageErrors } from './usage-errors.js';
import { installAuditHook } from './audit-hook.js';
import { notAudited } from '../modules/command-types.js';
import type { AnyModuleManifest } from '../modules/module-types.js';
import type { CommandIndex } from './command-index.js';

export type ProgramOptions = {
  /** Learns which module added each command (the generated docs). */
  owners?: Map<Command, AnyModuleManifest>;
  /**
   * Build only this top-level command ('' for none: `mailsvc --help`); every
   * other one is a line of the help taken from the index (command-index.ts).
   * Without it, the whole program is built.
   */
  only?: { index: CommandIndex; command: string };
};

/**
 * The `mailsvc` program. Nothing is built here: every command builds what it
 * uses when it runs, so `mailsvc --help` opens no database and loads no key.
 * `owners` learns which module added each command (the generated docs).
 */
export async function buildProgram(opts: ProgramOptions = {}): Promise<Command> {
  const only = opts.only;
  const wanted = (name: string): boolean => only === undefined || only.command === name;
  const program = new Command('mailsvc')
    .description('manage a self-hosted mail server')
    .version(SERVICE_VERSION)
    .showHelpAfterError('(run mailsvc --help for the commands)');
  if (wanted('serve')) {
    program
      .command('serve')
      .description('run the HTTP API (MAILSVC_API_HOST:MAILSVC_API_PORT, default 127.0.0.1:8080)')
      .action(async () => {
        const [{ serve }, { loadSettings }] = await Promise.all([import('../main.js'), import('../config/settings.js')]);
        await serve(loadSettings());
      });
    notAudited(program, ['serve'], 'runs the service: the API records the changes made through it');
  }
  if (only === undefined) await addModuleCommands(program, opts);
  else {
    const entry = only.index.commands.find((c) => c.name === only.command);
    if (entry && entry.modules.length > 0) await addModuleCommands(program, { list: await loadModules(entry.modules) });
  }
  if (wanted('db')) {
    dbCommands(program);
    notAudited(program, ['db migrate'], 'makes or updates the database the audit log lives in');
  }
  if (wanted('secrets')) secretsCommands(program);
  if (wanted('helper')) {
    // Its definitions list every helper action (the action table and its parsers): loaded for `helper` only.
    (await import('./commands/helper.js')).helperCommands(program);
    notAudited(program, ['helper serve', 'helper run'], "the root helper and its actions: the service's and the CLI's commands that ask for them are recorded");
  }
  if (only !== undefined) listTheOthers(program, only.index);
  installAuditHook(program);
  // Usage errors of the mail commands leave as one `mailsvc: …` line (exit 2), like every other error.
  for (const cmd of program.commands) if (!['serve', 'admin', 'db', 'secrets', 'helper'].includes(cmd.name())) oneLineUsageErrors(cmd);
  return program;
}

/**
 * The top-level commands not built, as the index has them: a name, its help
 * line, nothing under it (they are never run: the arguments named another
 * command, or none). Then every command in the full program's order.
 */
function listTheOthers(program: Command, index: CommandIndex): void {
  const terms = new WeakMap<Command, string>();
  for (const e of index.commands) {
    if (program.commands.some((c) => c.name() === e.name)) continue;
    const line = new Command(e.name).description(e.description);
    terms.set(line, e.term);
    program.addCommand(line, { hidden: e.hidden });
  }
  const place = new Map(index.commands.map((e, i) => [e.name, i]));
  // commander keeps them in a plain array, listed in its order: sorted in place.
  (program.commands as Command[]).sort((a, b) => (place.get(a.name()) ?? Infinity) - (place.get(b.name()) ?? Infinity));
  program.configureHelp({
    subcommandTerm(this: Help, cmd: Command): string {
      return terms.get(cmd) ?? Help.prototype.subcommandTerm.call(this, cmd);
    },
  });
}
