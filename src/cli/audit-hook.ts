import { userInfo } from 'node:os';
import type { Command } from 'commander';
import { runModule } from '../app/cli-runner.js';
import { SettingsError } from '../config/settings-error.js';
import { isAudited } from '../modules/command-types.js';
import type { AuditRecord } from '../modules/audit/index.js';
import { AppError } from '../shared/errors.js';
import { CliError } from './output.js';

const EXIT_RESULT: Record<number, string> = { 1: 'failed', 2: 'bad_request', 3: 'conflict', 4: 'not_found', 69: 'unavailable', 77: 'forbidden', 78: 'bad_setting' };
/** Options that shape the output, not the change. */
const NOT_RECORDED = new Set(['json', 'yes']);

function resultOf(err: unknown): string {
  if (err === undefined) return 'ok';
  if (err instanceof AppError) return err.code;
  if (err instanceof CliError) return EXIT_RESULT[err.exitCode] ?? 'failed';
  if (err instanceof SettingsError) return 'bad_setting';
  return 'failed';
}

/** The OS user running the command; under sudo, the user who called sudo too. */
function hostActor(): string {
  let name: string;
  try {
    name = userInfo().username;
  } catch {
    name = `uid ${process.getuid?.() ?? '?'}`;
  }
  const sudo = process.env.SUDO_USER;
  return sudo && sudo !== name ? `${name} (sudo by ${sudo})` : name;
}

/** What a command did, read from commander: its path, first argument (target), other arguments and options. */
export async function describeCommand(cmd: Command): Promise<Pick<AuditRecord, 'action' | 'target' | 'summary'>> {
  const { summarize } = await import('../modules/audit/index.js');
  const names: string[] = [];
  for (let c: Command | null = cmd; c?.parent; c = c.parent) names.unshift(c.name());
  const positional: Record<string, unknown> = {};
  cmd.registeredArguments.forEach((arg, i) => {
    const v: unknown = cmd.processedArgs[i];
    positional[arg.name()] = Array.isArray(v) ? v.join(', ') : v;
  });
  // A variadic first argument (queue hold <id...>) is its values joined, as in the summary.
  const head: unknown = cmd.processedArgs[0];
  const first: unknown = Array.isArray(head) ? head.join(', ') : head;
  const opts = Object.fromEntries(Object.entries(cmd.opts()).filter(([k]) => !NOT_RECORDED.has(k)));
  const rest = Object.fromEntries(Object.entries(positional).slice(1));
  return { action: `cli: ${names.join(' ')}`, target: typeof first === 'string' ? first : null, summary: summarize(rest, opts) };
}

/**
 * Writes the record through the audit module (built, like any command's, only
 * now); says on stderr when a change that was made could not be recorded. No
 * database (a wrong data directory) means nothing to record in: the command
 * itself already said so.
 */
async function record(rec: AuditRecord): Promise<void> {
  const written = await runModule((m) => m.get('audit'))((audit) => audit.service.record(rec)).catch(() => false);
  // A failed command has said what went wrong (often the same unreachable database): one line is enough.
  if (!written && rec.result === 'ok') process.stderr.write('mailsvc: warning: the change was made, but its audit record could not be written\n');
}

let running: Command | undefined;

/**
 * Records every run of a command that runs something, unless its module marks
 * it `readOnly` or `notAudited` (command-types.ts): who (the OS user), from
 * `cli`, the command, its target and its options with secrets redacted, and
 * `ok` or the error's code. A
 * success is recorded after the action; a failure by `recordFailure`, called
 * with the error before the CLI exits. An audit failure never changes the
 * command's outcome.
 */
export function installAuditHook(program: Command): void {
  program.hook('preAction', (_program, action) => {
    running = action;
  });
  program.hook('postAction', async (_program, action) => {
    running = undefined;
    if (isAudited(action)) await record({ actor: hostActor(), tokenId: null, source: 'cli', result: 'ok', ...(await describeCommand(action)) });
  });
}

export async function recordFailure(err: unknown): Promise<void> {
  const action = running;
  running = undefined;
  if (!action || !isAudited(action)) return;
  await record({ actor: hostActor(), tokenId: null, source: 'cli', result: resultOf(err ?? new Error('failed')), ...(await describeCommand(action)) }).catch(() => undefined);
}
