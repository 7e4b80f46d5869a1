import { InvalidArgumentError } from 'commander';
import { notAudited, readOnly } from '../command-types.js';
import { sortOption, wholeNumber } from '../../shared/terminal/options.js';
import type { Command, CommanderError } from 'commander';
import { AppError } from '../../shared/errors.js';
import { DEFAULT_LIMIT, MAX_LIMIT } from '../../shared/paging.js';
import type { AuditService } from './audit.service.js';
import { parseIsoTime } from '../../shared/iso-time.js';
import { escapeControl } from '../../shared/terminal/output.js';
import type { AuditEntry } from './schema.js';
import { AUDIT_SORT } from './schema.js';
import { parseSpan } from '../../shared/time-span.js';

/** Opens the audit service for one command and closes what it opened. */
export type OpenAudit = <T>(fn: (audit: AuditService) => Promise<T>) => Promise<T>;

/** `--since`: an ISO 8601 time, or a span back from now such as 30m, 24h, 7d, 2w. */
export function sinceOption(now: () => number): (value: string) => number {
  return (value) => {
    const span = parseSpan(value);
    if (span !== null) return now() - span;
    const t = parseIsoTime(value.trim());
    if (t !== null) return t;
    throw new InvalidArgumentError('Use an ISO 8601 time (2026-01-31T00:00:00Z) or a span such as 30m, 24h, 7d, 2w.');
  };
}

function render(items: AuditEntry[], total: number, offset: number): string {
  if (total === 0) return 'No audit records match.';
  const rows = items.map((e) => [e.at.slice(0, 19).replace('T', ' '), e.actor, e.source, e.action, e.target ?? '-', e.result]);
  const head = ['TIME (UTC)', 'WHO', 'FROM', 'ACTION', 'TARGET', 'RESULT'];
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: string[]): string => cells.map((c, i) => c.padEnd(widths[i] ?? 0)).join('  ').trimEnd();
  const more = offset + items.length < total ? `\nShowing ${offset + 1}-${offset + items.length} of ${total}; --offset ${offset + items.length} for more` : '';
  return [line(head), ...rows.map(line)].join('\n') + more;
}

const PASS_THROUGH = new Set(['commander.help', 'commander.helpDisplayed', 'commander.version']);

/** A usage error (bad --since, unknown option) is one `mailsvc: …` line and exit 2, like bad input elsewhere. */
function usageErrorsAsBadInput(cmd: Command, path: string): void {
  cmd
    .showHelpAfterError(false)
    .configureOutput({ outputError: () => undefined })
    .exitOverride((err: CommanderError) => {
      if (PASS_THROUGH.has(err.code)) process.exit(err.exitCode);
      throw new AppError('bad_request', `${err.message.replace(/^error: /, '')} (see mailsvc ${path} --help)`);
    });
}

/** `mailsvc audit list|prune`. */
export function auditCommands(program: Command, open: OpenAudit): void {
  const audit = program.command('audit').description('the audit log of every change made through the API or this CLI');
  sortOption(audit.command('list').description('list audit records, newest first'), AUDIT_SORT, 'newest first (-at)')
    .option('--action <action>', 'only this action, e.g. "DELETE /domains/:domain" or "cli: domains delete"')
    .option('--target <target>', 'only this target, e.g. example.org')
    .option('--actor <who>', 'only what this admin (or host user) did, e.g. admin')
    .option('--since <when>', 'only records from this time on: ISO 8601 or a span such as 24h, 7d', sinceOption(Date.now))
    .option('--limit <n>', `how many to show (1 to ${MAX_LIMIT})`, wholeNumber(1, MAX_LIMIT), DEFAULT_LIMIT)
    .option('--offset <n>', 'how many to skip', wholeNumber(0, Number.MAX_SAFE_INTEGER), 0)
    .option('--json', 'print the records as one JSON array')
    .action(async (opts: { action?: string; target?: string; actor?: string; since?: number; limit: number; offset: number; json?: boolean; sort?: string }) => {
      const filter = { action: opts.action, target: opts.target, actor: opts.actor, from: opts.since };
      const page = await open((a) => a.list(filter, { limit: opts.limit, offset: opts.offset }, opts.sort));
      process.stdout.write((opts.json ? JSON.stringify(page.items, null, 2) : escapeControl(render(page.items, page.total, page.offset))) + '\n');
    });
  audit
    .command('prune')
    .description('delete records older than MAILSVC_AUDIT_RETENTION_DAYS (default 365); also runs by itself at most hourly')
    .option('--json', 'print the result as JSON')
    .action(async (opts: { json?: boolean }) => {
      const r = await open((a) => a.prune());
      process.stdout.write((opts.json ? JSON.stringify(r) : `Deleted ${r.deleted} audit record(s) older than ${r.before}.`) + '\n');
    });
  usageErrorsAsBadInput(audit, 'audit');
  for (const sub of audit.commands) usageErrorsAsBadInput(sub, `audit ${sub.name()}`);
  readOnly(program, ['audit list']);
  notAudited(program, ['audit prune'], 'deletes only the records past MAILSVC_AUDIT_RETENTION_DAYS, as every process does hourly');
}
