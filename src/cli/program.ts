import { Command } from 'commander';
import { addModuleCommands } from '../app/commands.js';
import { SERVICE_VERSION } from '../shared/version.js';
import { dbCommands } from './commands/db.js';
import { helperCommands } from './commands/helper.js';
import { secretsCommands } from './commands/secrets.js';
import { oneLineUsageErrors } from './usage-errors.js';
import { installAuditHook } from './audit-hook.js';
import { notAudited } from '../modules/command-types.js';
import type { AnyModuleManifest } from '../modules/module-types.js';

/**
 * The `mailsvc` program. Nothing is built here: every command builds what it
 * uses when it runs, so `mailsvc --help` opens no database and loads no key.
 * `owners` learns which module added each command (the generated docs).
 */
export async function buildProgram(opts: { owners?: Map<Command, AnyModuleManifest> } = {}): Promise<Command> {
  const program = new Command('mailsvc')
    .description('manage a self-hosted mail server')
    .version(SERVICE_VERSION)
    .showHelpAfterError('(run mailsvc --help for the commands)');
  program
    .command('serve')
    .description('run the HTTP API (MAILSVC_API_HOST:MAILSVC_API_PORT, default 127.0.0.1:8080)')
    .action(async () => {
      const [{ serve }, { loadSettings }] = await Promise.all([import('../main.js'), import('../config/settings.js')]);
      await serve(loadSettings());
    });
  await addModuleCommands(program, opts);
  dbCommands(program);
  secretsCommands(program);
  helperCommands(program);
  notAudited(program, ['serve'], 'runs the service: the API records the changes made through it');
  notAudited(program, ['db migrate'], 'makes or updates the database the audit log lives in');
  notAudited(program, ['helper serve', 'helper run'], "the root helper and its actions: the service's and the CLI's commands that ask for them are recorded");
  installAuditHook(program);
  // Usage errors of the mail commands leave as one `mailsvc: …` line (exit 2), like every other error.
  for (const cmd of program.commands) if (!['serve', 'admin', 'db', 'secrets', 'helper'].includes(cmd.name())) oneLineUsageErrors(cmd);
  return program;
}
