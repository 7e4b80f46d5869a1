import type { Command } from 'commander';
// The commands' own files, not the modules' index: `mailsvc --help` loads the
// command definitions and nothing a module runs on.
import { accountCommands } from '../modules/accounts/commands.js';
import { aliasCommands } from '../modules/aliases/commands.js';
import { appPasswordCommands } from '../modules/app-passwords/commands.js';
import { adminCommands } from '../modules/auth/commands.js';
import { apiKeyCommands } from '../modules/api-keys/commands.js';
import { auditCommands } from '../modules/audit/commands.js';
import { jobCommands } from '../modules/jobs/commands.js';
import { progressView } from '../shared/terminal/progress.js';
import { domainCommands } from '../modules/domains/commands.js';
import { queueCommands } from '../modules/queue/commands.js';
import { banCommands } from '../modules/bans/commands.js';
import { firewallCommands } from '../modules/firewall/commands.js';
import { sendLimitCommands } from '../modules/send-limits/commands.js';
import { limitCommands } from '../modules/limits/commands.js';
import { settingsCommands } from '../modules/settings/commands.js';
import { installCommands } from '../modules/install/commands.js';
import { statsCommands } from '../modules/stats/commands.js';
import { reportCommands } from '../modules/report/commands.js';
import { dnsCommands } from '../modules/dns/commands.js';
import { backupCommands } from '../modules/backups/commands.js';
import { doctorCommands } from '../modules/doctor/commands.js';
import { runModule, runModuleIfMigrated } from './cli-runner.js';

/**
 * The modules' commands, each given a way to build its own module when it
 * runs. Adding a module's commands is one line here.
 */
export const MODULE_COMMANDS: readonly ((program: Command) => void)[] = [
  (p) => adminCommands(p, runModule((m) => Promise.resolve(m.infra.settings), { database: false }), runModule((m) => m.admin(), { redis: true }), runModuleIfMigrated((m) => m.admin(), { redis: true })),
  (p) => domainCommands(p, runModule((m) => m.domains())),
  (p) => accountCommands(p, runModule((m) => m.accounts(), { redis: true })),
  (p) => appPasswordCommands(p, runModule((m) => m.appPasswords(), { redis: true })),
  (p) => sendLimitCommands(p, runModule((m) => m.sendLimits(), { redis: true })),
  (p) => aliasCommands(p, runModule((m) => m.aliases())),
  (p) => apiKeyCommands(p, runModule((m) => m.apiKeys())),
  (p) => auditCommands(p, (fn) => runModule((m) => m.audit())((a) => fn(a.service))),
  // The queue lives in Postfix, not in the database: no schema check (the audit record still needs one).
  (p) => queueCommands(p, runModule((m) => m.queue(), { database: false })),
  (p) => limitCommands(p, runModule((m) => m.limits(), { redis: true })),
  (p) => banCommands(p, runModule((m) => m.bans())),
  (p) => firewallCommands(p, runModule((m) => m.firewall())),
  (p) => settingsCommands(p, runModule((m) => m.settingsCli()), () => progressView()),
  // install makes the database (it migrates): no schema check; the audit record is written when there is one.
  (p) => installCommands(p, runModule((m) => m.install(), { schema: false })),
  (p) => statsCommands(p, runModule((m) => m.stats()), () => progressView()),
  // The report shows a database or Redis that is away or unmigrated: it checks neither first.
  (p) => reportCommands(p, runModule((m) => m.report(), { schema: false })),
  (p) => dnsCommands(p, runModule((m) => m.dns()), () => progressView()),
  // restore, fetch and units run on a fresh host too: no schema check (the restore migrates what it restored).
  (p) => backupCommands(p, runModule((m) => m.backups(), { redis: true }), runModule((m) => m.backups(), { schema: false }), () => progressView(), runModule(async (m) => (await import('../modules/backups/index.js')).createRestoreService(m.infra), { schema: false })),
  // The doctor shows a database that is away or unmigrated, a missing helper socket …: it checks nothing first.
  (p) => doctorCommands(p, runModule((m) => m.doctor(), { schema: false })),
  (p) => jobCommands(p, (fn) => runModule((m) => m.jobs())((j) => fn(j.runner)), () => progressView()),
];
