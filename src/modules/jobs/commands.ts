import { wholeNumber } from '../../shared/terminal/options.js';
import { notAudited, readOnly } from '../command-types.js';
import type { Command } from 'commander';
import type { JobRunner } from './job-runner.js';
import type { Job, SampleJobInput } from './schema.js';

import { escapeControl } from '../../shared/terminal/output.js';
import type { ProgressView } from '../../shared/terminal/progress.js';

/** Opens the job runner for one command and closes what it opened. */
export type OpenJobs = <T>(fn: (runner: JobRunner) => Promise<T>) => Promise<T>;

const describeJob = (j: Job): string =>
  [`Job ${j.id} (${j.kind})`, `  state:    ${j.state}`, `  progress: ${Math.round(j.progress * 100)}%`, `  message:  ${j.message}`, ...(j.result === null ? [] : [`  result:   ${JSON.stringify(j.result)}`])].join('\n');

/** `mailsvc jobs show|sample`. A failed foreground job exits 1 after printing its record. */
export function jobCommands(program: Command, open: OpenJobs, view: () => ProgressView): void {
  const jobs = program.command('jobs').description('long work (backups, restores, checks) run as jobs');
  jobs
    .command('show')
    .description('show one job')
    .argument('<id>', 'the job id (from a 202 answer)')
    .option('--json', 'print it as JSON')
    .action(async (id: string, opts: { json?: boolean }) => {
      const job = await open((r) => r.get(id));
      process.stdout.write((opts.json ? JSON.stringify(job, null, 2) : escapeControl(describeJob(job))) + '\n');
    });
  jobs
    .command('sample')
    .description('run the sample job in the foreground: counts to --count, with progress (a self-test of jobs)')
    .requiredOption('--count <n>', 'how far to count (1 to 1000)', wholeNumber(1, 1000))
    .option('--step-ms <ms>', 'pause per step (0 to 1000, default 10)', wholeNumber(0, 1000))
    .option('--fail-at <n>', 'fail on reaching this number', wholeNumber(1, 1000))
    .option('--json', 'print the final job record as JSON')
    .action(async (opts: { count: number; stepMs?: number; failAt?: number; json?: boolean }) => {
      const input: SampleJobInput = { count: opts.count, ...(opts.stepMs === undefined ? {} : { step_ms: opts.stepMs }), ...(opts.failAt === undefined ? {} : { fail_at: opts.failAt }) };
      const display = view();
      const abort = new AbortController();
      const interrupt = (): void => abort.abort(new Error('interrupted (Ctrl-C)'));
      process.once('SIGINT', interrupt);
      try {
        const job = await open((r) => r.runHere('sample', input, (u) => display.update(u), abort.signal));
        display.end(job);
        process.stdout.write((opts.json ? JSON.stringify(job, null, 2) : escapeControl(describeJob(job))) + '\n');
        if (job.state === 'failed') process.exitCode = 1;
      } finally {
        process.off('SIGINT', interrupt);
      }
    });
  readOnly(program, ['jobs show']);
  notAudited(program, ['jobs sample'], 'a self-test of jobs: the sample job counts and changes nothing else');
}
