import type { Command } from 'commander';
import { InvalidArgumentError } from 'commander';
import type { Page } from '../../shared/paging.js';
import { QUEUE_NAMES } from '../../shared/queue-id.js';
import type { QueueName } from '../../shared/queue-id.js';
import { CliError, output } from '../../shared/terminal/output.js';
import { confirm, formatBytes, pageNote, pageOf, pagingOptions, sortOption, table } from '../../shared/terminal/options.js';
import { plural } from '../../shared/terminal/human.js';
import { commandGroup, readOnly } from '../command-types.js';
import type { Run } from '../command-types.js';
import { durationSeconds, startQueueRead } from './queue.service.js';
import type { QueueService } from './queue.service.js';
import type { QueueEntry } from './schema.js';
import { QUEUE_SORT } from './schema.js';

type FilterOpts = { queue?: QueueName; sender?: string; recipient?: string };

const queueName = (v: string): QueueName => {
  if (!(QUEUE_NAMES as readonly string[]).includes(v)) throw new InvalidArgumentError(`Use one of ${QUEUE_NAMES.join(', ')}.`);
  return v as QueueName;
};

function filterOptions(cmd: Command): Command {
  return cmd
    .option('--queue <name>', `only this queue: ${QUEUE_NAMES.join(', ')}`, queueName)
    .option('--sender <address>', 'only mail from this envelope sender (any case), or @domain')
    .option('--recipient <address>', 'only mail with this recipient (any case), or @domain');
}

const row = (e: QueueEntry): string[] => [
  e.queue_id, e.queue_name, e.arrival_time.slice(0, 19).replace('T', ' '), formatBytes(e.message_size), e.sender,
  e.recipients.map((r) => r.address).join(', '), e.recipients.find((r) => r.delay_reason)?.delay_reason ?? '',
];

/** A progress line on a terminal while a bulk action works through its batches. */
const progress = (verb: string) => (done: number, total: number): void => {
  if (process.stderr.isTTY) process.stderr.write(`\r${verb} ${done} of ${total}${done === total ? '\n' : ''}`);
};

/** `mailsvc queue list|counts|hold|release|delete`. */
export function queueCommands(program: Command, run: Run<{ service: QueueService }>): void {
  const queue = commandGroup(program, 'queue', 'the Postfix mail queue');

  sortOption(pagingOptions(filterOptions(queue.command('list').description('list the messages in the mail queue'))), QUEUE_SORT, "postqueue's order")
    .option('--json', 'print the messages as a JSON array')
    .action(async (opts: FilterOpts & Page & { json?: boolean; sort?: string }) => {
      // postqueue starts as soon as the settings are read and runs while the rest of the command loads.
      const page = await run((m, started) => m.service.list({ queue: opts.queue, sender: opts.sender, recipient: opts.recipient }, pageOf(opts), opts.sort, started), startQueueRead);
      output(opts.json, page.items, () =>
        page.total === 0 ? 'The mail queue holds no such message.' : table(['id', 'queue', 'arrived (UTC)', 'size', 'sender', 'recipients', 'delay reason'], page.items.map(row)) + pageNote(page),
      );
    });

  queue
    .command('counts')
    .description('how many messages each queue holds')
    .option('--json', 'print the counts as JSON')
    .action(async (opts: { json?: boolean }) => {
      const counts = await run((m, started) => m.service.counts(started), startQueueRead);
      output(opts.json, counts, () => table(['queue', 'messages'], Object.entries(counts).map(([q, n]) => [q, String(n)])));
    });

  for (const [name, description, verb] of [['hold', 'put messages on hold', 'hold'], ['release', 'release messages from hold', 'release']] as const) {
    queue
      .command(name)
      .description(`${description} (one id: exit 4 when it is not in the queue, 3 when it is in the wrong state; several: one postsuper run, the count it changed)`)
      .argument('<queue-id...>', 'Postfix queue ids (short or long form)')
      .option('--json', 'print the result as JSON')
      .action(async (ids: string[], opts: { json?: boolean }) => {
        if (ids.length === 1) {
          const done = await run((m) => m.service[verb](ids[0] ?? ''));
          output(opts.json, done, () => `Message ${done.queue_id} ${done.action}.`);
          return;
        }
        const done = await run((m) => m.service.batch(verb, ids));
        output(opts.json, done, () => `${plural(done.count, 'message')} ${done.action}${done.count < done.requested ? ` (of ${done.requested}: the others were gone or already in that state)` : ''}.`);
      });
  }

  filterOptions(queue.command('delete').description('delete one message, or every message matching --sender/--recipient/--older-than/--queue'))
    .argument('[queue-id]', 'the Postfix queue id of one message')
    .option('--older-than <duration>', 'only mail that arrived longer ago than this (seconds, or 30m, 4h, 2d, 1w)')
    .option('--bounce', 'return the messages to their senders with a non-delivery notice instead of dropping them')
    .option('--dry-run', 'only count the matching messages')
    .option('--yes', 'do not ask before a bulk delete')
    .option('--json', 'print the result as JSON')
    .action(async (id: string | undefined, opts: FilterOpts & { olderThan?: string; bounce?: boolean; dryRun?: boolean; yes?: boolean; json?: boolean }) => {
      const verb = opts.bounce ? 'returned to sender' : 'deleted';
      if (id !== undefined) {
        if (opts.sender !== undefined || opts.recipient !== undefined || opts.olderThan !== undefined || opts.queue !== undefined || opts.dryRun) {
          throw new CliError('give a queue id or filters (--sender, --recipient, --older-than, --queue), not both', 2);
        }
        const done = await run((m) => m.service.delete(id, { bounce: opts.bounce === true }));
        output(opts.json, done, () => `Message ${done.queue_id} ${verb}.`);
        return;
      }
      const filter = {
        queue: opts.queue, sender: opts.sender, recipient: opts.recipient,
        olderThanSeconds: opts.olderThan === undefined ? undefined : durationSeconds('--older-than', opts.olderThan),
      };
      const result = await run(async (m) => {
        const { count } = await m.service.deleteMatching(filter, { dryRun: true });
        if (opts.dryRun || count === 0) return { count, dryRun: true };
        process.stderr.write(`${plural(count, 'message')} match${count === 1 ? 'es' : ''}.\n`);
        await confirm(opts.yes, `${opts.bounce ? 'Return' : 'Delete'} ${count === 1 ? 'this message' : `these ${count} messages`}?`, `${plural(count, 'message')} match${count === 1 ? 'es' : ''}; nothing was ${verb}`);
        return { ...(await m.service.deleteMatching(filter, { bounce: opts.bounce === true, onProgress: progress(opts.bounce ? 'returned' : 'deleted') })), dryRun: false };
      });
      output(opts.json, { count: result.count }, () => (result.dryRun ? `${plural(result.count, 'message')} match${result.count === 1 ? 'es' : ''}; nothing changed.` : `${plural(result.count, 'message')} ${verb}.`));
    });
  readOnly(program, ['queue list', 'queue counts']);
}
