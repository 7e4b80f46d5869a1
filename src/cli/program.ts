import { Command } from 'commander';
import { loadSettings } from '../config/settings.js';
import { serve } from '../main.js';
import { SERVICE_VERSION } from '../shared/version.js';
import { adminCommands } from './commands/admin.js';
import { apiKeyCommands } from './commands/api-keys.js';
import { dbCommands } from './commands/db.js';
import { mailCommands } from './commands/mail.js';
import { secretsCommands } from './commands/secrets.js';

export function buildProgram(): Command {
  const program = new Command('mailsvc')
    .description('manage a self-hosted mail server')
    .version(SERVICE_VERSION)
    .showHelpAfterError('(run mailsvc --help for the commands)');
  program
    .command('serve')
    .description('run the HTTP API (MAILSVC_API_HOST:MAILSVC_API_PORT, default 127.0.0.1:8080)')
    .action(async () => serve(loadSettings()));
  adminCommands(program);
  dbCommands(program);
  secretsCommands(program);
  mailCommands(program);
  apiKeyCommands(program);
  return program;
}
