import type { Command } from 'commander';
import { InvalidArgumentError } from 'commander';
import { CliError, output } from '../../shared/terminal/output.js';
import { formatBytes, pageNote, pageOf, pagingOptions, table } from '../../shared/terminal/options.js';
import { plural } from '../../shared/terminal/human.js';
import type { Page } from '../../shared/paging.js';
import { commandGroup, notAudited, readOnly } from '../command-types.js';
import type { Run } from '../command-types.js';
import type { StatsService, RangeInput } from './stats.service.js';
import type { Direction } from './collector.js';
import type { ProgressView } from '../../shared/terminal/progress.js';

const DIRS = ['inbound', 'outbound', 'local'] as const;
/** Runs reading less than this show no progress (the timer's runs read a few KiB). */
const PROGRESS_MIN_BYTES = 64 << 20;
/** A journal run shows progress when it reads more than a week of the journal's time (a first run). */
const PROGRESS_MIN_JOURNAL_MS = 7 * 86_400_000;
const days = (ms: number): string => (ms / 86_400_000).toFixed(1);
const JOURNAL_FROM = { beginning: ' (from its oldest entry)', cursor: '', 'cursor-gone': ' (the entry the last run ended with was no longer in the journal: read from the oldest one after it)' } as const;
const direction = (v: string): Direction => {
  if (!(DIRS as readonly string[]).includes(v)) throw new InvalidArgumentError(`Use one of ${DIRS.join(', ')}.`);
  return v as Direction;
};
const bucket = (v: string): 'hour' | 'day' => {
  if (v !== 'hour' && v !== 'day') throw new InvalidArgumentError('Use hour or day.');
  return v;
};

function rangeOptions(cmd: Command): Command {
  return cmd
    .option('--from <time>', 'start, ISO 8601 (2026-01-31 or 2026-01-31T08:00:00Z); default 30 days before --to')
    .option('--to <time>', 'end (exclusive), ISO 8601; default now')
    .option('--mailbox <address>', 'only this mailbox')
    .option('--direction <dir>', `only ${DIRS.join(', ')}`, direction)
    .option('--json', 'print the result as JSON');
}

type RangeOpts = RangeInput & { json?: boolean };
const figures = (f: { messages: number; bytes: number }) => `${f.messages} / ${formatBytes(f.bytes)}`;

/** `mailsvc stats collect|summary|mailboxes|timeline`. */
export function statsCommands(program: Command, run: Run<{ service: StatsService }>, view: () => ProgressView): void {
  const stats = commandGroup(program, 'stats', 'traffic statistics from the Postfix log');

  stats
    .command('collect')
    .description('read what the Postfix log (MAILSVC_MAIL_LOG, or the systemd journal without it) gained since the last run, store it, and drop rows past the retention')
    .option('--json', 'print the result as JSON')
    .action(async (opts: { json?: boolean }) => {
      // A first run over a big log takes a while: progress on stderr (a bar on a terminal, tenths otherwise).
      let display: ProgressView | null = null;
      const r = await run((m) =>
        m.service.collect((done, total, unit) => {
          if (total < (unit === 'bytes' ? PROGRESS_MIN_BYTES : PROGRESS_MIN_JOURNAL_MS)) return;
          display ??= view();
          const message = unit === 'bytes' ? `read ${formatBytes(done)} of ${formatBytes(total)}` : `read the journal's ${days(done)} of ${days(total)} days`;
          display.update({ progress: Math.min(1, done / total), message });
        }),
      );
      const shown = display as ProgressView | null;
      shown?.end({ progress: 1, message: `read ${plural(r.lines, 'line')}` });
      const none = r.files_read.length === 0 && r.journal === null;
      const source = r.journal === null ? r.files_read.join(', ') : `the systemd journal${JOURNAL_FROM[r.journal.from]}`;
      output(opts.json, r, () =>
        none
          ? 'No mail log found, and no systemd journal here: check MAILSVC_MAIL_LOG.'
          : `Read ${plural(r.lines, 'line')} from ${source}: ${plural(r.rows_added, 'row')} added, ${r.rows_pruned} past the retention removed, ${plural(r.open_messages, 'message')} still open.`,
      );
      if (none && !opts.json) throw new CliError('no mail log to read: no MAILSVC_MAIL_LOG file and no systemd journal here; set MAILSVC_MAIL_LOG to the Postfix log', 1);
    });

  rangeOptions(stats.command('summary').description('messages and bytes per direction for a time range'))
    .action(async (opts: RangeOpts) => {
      const s = await run((m) => m.service.summary(opts));
      output(opts.json, s, () =>
        `${s.from} to ${s.to}${s.mailbox ? ` for ${s.mailbox}` : ''}\n` +
        table(['direction', 'messages', 'bytes'], [...DIRS.map((d) => [d, String(s[d].messages), formatBytes(s[d].bytes)]), ['total', String(s.total.messages), formatBytes(s.total.bytes)]]),
      );
    });

  pagingOptions(rangeOptions(stats.command('mailboxes').description('messages / bytes per mailbox and direction, busiest first')))
    .action(async (opts: RangeOpts & Page) => {
      const page = await run((m) => m.service.mailboxes(opts, pageOf(opts)));
      output(opts.json, page.items, () =>
        page.total === 0 ? 'No traffic in that range.' : table(['mailbox', ...DIRS], page.items.map((i) => [i.mailbox, ...DIRS.map((d) => figures(i[d]))])) + pageNote(page),
      );
    });

  rangeOptions(stats.command('timeline').description('messages / bytes per hour or day'))
    .option('--bucket <size>', 'hour or day (default: hour up to 2 days, else day)', bucket)
    .action(async (opts: RangeOpts & { bucket?: 'hour' | 'day' }) => {
      const t = await run((m) => m.service.timeline(opts));
      output(opts.json, t, () =>
        t.items.length === 0 ? 'No traffic in that range.' : table(['time (UTC)', ...DIRS], t.items.map((i) => [i.time.slice(0, 16).replace('T', ' '), ...DIRS.map((d) => figures(i[d]))])),
      );
    });
  readOnly(program, ['stats summary', 'stats mailboxes', 'stats timeline']);
  notAudited(program, ['stats collect'], 'the timer runs it every few minutes, and it changes only figures derived from the log');
}
