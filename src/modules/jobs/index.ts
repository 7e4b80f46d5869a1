import type { Command } from 'commander';
import type { FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import type { Db } from '../../db/database.js';
import type { Clock } from '../../shared/clock.js';
import type { AdminHooks, RouteErrors } from '../route-types.js';
import { jobCommands } from './commands.js';
import type { OpenJobs, ProgressView } from './commands.js';
import { JobRepository } from './job.repository.js';
import { JobRunner } from './job-runner.js';
import type { RunnerOptions } from './job-runner.js';
import { jobRoutes } from './routes.js';
import { sampleJob } from './sample-job.js';

export { JobRunner } from './job-runner.js';
export type { JobContext, JobHandler, JobUpdate, RunnerOptions } from './job-runner.js';
export { jobCommands } from './commands.js';
export type { OpenJobs, ProgressView } from './commands.js';
export { JobSchema, JobStartedSchema } from './schema.js';
export type { Job, JobStarted, JobState } from './schema.js';

export type JobsDeps = { db: Db; clock: Clock; log: Logger; runner?: RunnerOptions };

/** Jobs: the runner (other modules register their kinds on it), `GET /admin/jobs/{id}`, `mailsvc jobs …`. */
export function createJobsModule(deps: JobsDeps) {
  const runner = new JobRunner(new JobRepository(deps.db), deps.clock, deps.log, deps.runner);
  runner.register('sample', sampleJob);
  return {
    runner,
    routes: (app: FastifyInstance, hooks: AdminHooks, errors: RouteErrors) => jobRoutes(app, runner, hooks, errors),
    commands: (program: Command, open: OpenJobs, view: () => ProgressView) => jobCommands(program, open, view),
  };
}

export type JobsModule = ReturnType<typeof createJobsModule>;
