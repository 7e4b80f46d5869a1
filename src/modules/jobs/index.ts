import type { FastifyInstance } from 'fastify';
import type { Infra } from '../../infra/index.js';
import type { RouteKit } from '../route-types.js';
import { JobRepository } from './job.repository.js';
import { JobRunner } from './job-runner.js';
import type { RunnerOptions } from './job-runner.js';
import { sampleJob } from './sample-job.js';

export type { JobRunner } from './job-runner.js';
export { JobFailed } from './job-runner.js';
export type { JobContext, JobHandler, JobUpdate, RunnerOptions } from './job-runner.js';
export { jobCommands } from './commands.js';
export type { OpenJobs } from './commands.js';
export { JobSchema, JobStartedSchema } from './schema.js';
export type { Job, JobStarted, JobState } from './schema.js';

/** Jobs: the runner (other modules register their kinds on it), `GET /admin/jobs/{id}`; commands in commands.ts. */
export function createJobsModule(infra: Pick<Infra, 'db' | 'clock' | 'log'>, opts: { runner?: RunnerOptions } = {}) {
  const runner = new JobRunner(new JobRepository(infra.db), infra.clock, infra.log, opts.runner);
  runner.register('sample', sampleJob);
  return {
    runner,
    routes: async (app: FastifyInstance, kit: RouteKit) => (await import('./routes.js')).jobRoutes(app, runner, kit.hooks, kit.errors),
  };
}
export type JobsModule = ReturnType<typeof createJobsModule>;
