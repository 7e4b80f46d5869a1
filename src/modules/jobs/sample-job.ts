import { AppError } from '../../shared/errors.js';
import type { JobHandler } from './job-runner.js';
import type { SampleJobInput } from './schema.js';

const sleep = (ms: number, signal: AbortSignal): Promise<void> =>
  new Promise((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason instanceof Error ? signal.reason : new Error('interrupted'));
    const t = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = (): void => {
      clearTimeout(t);
      reject(signal.reason instanceof Error ? signal.reason : new Error('interrupted'));
    };
    signal.addEventListener('abort', onAbort, { once: true });
  });

/**
 * The `sample` job: counts to `count`, reporting progress each step, and
 * fails on `fail_at` when asked. It exercises the job machinery end to end
 * (a self-test for an administrator, and the tests' subject).
 */
export const sampleJob: JobHandler<SampleJobInput> = async (input, ctx) => {
  const step = input.step_ms ?? 10;
  for (let i = 1; i <= input.count; i++) {
    await sleep(step, ctx.signal);
    if (input.fail_at === i) throw new AppError('bad_request', `sample job failed at ${i} as asked`);
    await ctx.progress(i / input.count, `counting to ${input.count}`);
  }
  return { counted: input.count };
};
