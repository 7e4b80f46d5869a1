import { userInfo } from 'node:os';
import { Command } from 'commander';
import pino from 'pino';
import { loadSettings } from '../config/settings.js';
import { SettingsError } from '../config/settings-error.js';
import { createDb } from '../db/database.js';
import { createAuditModule, summarize } from '../modules/audit/index.js';
import type { AuditRecord } from '../modules/audit/index.js';
import { AppError } from '../shared/errors.js';
import { systemClock } from '../shared/clock.js';
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
export function describeCommand(cmd: Command): Pick<AuditRecord, 'action' | 'target' | 'summary'> {
  const names: string[] = [];
  for (let c: Command | null = cmd; c?.parent; c = c.parent) names.unshift(c.name());
  const positional: Record<string, unknown> = {};
  cmd.registeredArguments.forEach((arg, i) => {
    const v: unknown = cmd.processedArgs[i];
    positional[arg.name()] = Array.isArray(v) ? v.join(', ') : v;
  });
  const first: unknown = cmd.processedArgs[0];
  const opts = Object.fromEntries(Object.entries(cmd.opts()).filter(([k]) => !NOT_RECORDED.has(k)));
  const rest = Object.fromEntries(Object.entries(positional).slice(1));
  return { action: `cli: ${names.join(' ')}`, target: typeof first === 'string' ? first : null, summary: summarize(rest, opts) };
}

/** Writes the record; says on stderr when a change that was made could not be recorded. */
async function record(rec: AuditRecord): Promise<void> {
  let settings;
  try {
    settings = loadSettings();
  } catch {
    return; // No database to write to: the command itself already said why.
  }
  const db = createDb(settings.databaseUrl);
  try {
    const log = pino({ level: 'silent' });
    const written = await createAuditModule({ db, clock: systemClock, log, retentionDays: settings.auditRetentionDays }).service.record(rec);
    // A failed command has said what went wrong (often the same unreachable database): one line is enough.
    if (!written && rec.result === 'ok') process.stderr.write('mailsvc: warning: the change was made, but its audit record could not be written\n');
  } finally {
    await db.destroy().catch(() => undefined);
  }
}

/**
 * Wraps a state-changing command's action: after it ran, one audit record
 * (who: the OS user; from: `cli`; the command, its target and its options,
 * secrets redacted; `ok` or the error's code). The action's own error is
 * passed on unchanged; an audit failure is logged, never raised.
 */
export function audited<A extends unknown[]>(action: (...args: A) => Promise<void> | void): (...args: A) => Promise<void> {
  return async (...args: A) => {
    const cmd = args.at(-1);
    let failure: unknown;
    try {
      await action(...args);
    } catch (err) {
      failure = err ?? new Error('failed');
      throw err;
    } finally {
      if (cmd instanceof Command) {
        await record({ actor: hostActor(), tokenId: null, source: 'cli', result: resultOf(failure), ...describeCommand(cmd) }).catch(() => undefined);
      }
    }
  };
}
