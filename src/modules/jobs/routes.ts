import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { ADMIN_SECURITY as security } from '../route-types.js';
import type { AdminHooks, RouteErrors } from '../route-types.js';
import type { JobRunner } from './job-runner.js';
import { JobParam, JobSchema, JobStartedSchema, SampleJobBody } from './schema.js';

export function jobRoutes(app: FastifyInstance, runner: JobRunner, hooks: AdminHooks, errors: RouteErrors): void {
  const r = app.withTypeProvider<TypeBoxTypeProvider>();
  const tags = ['jobs'];
  r.get('/admin/jobs/:id', {
    onRequest: hooks.admin,
    schema: { tags, security, description: 'Reads a job started by a route that answered 202: its state (queued, running, succeeded, failed), progress from 0 to 1, the last message, and the result or the reason it failed.', summary: 'One job: state, progress 0..1, message and result', params: JobParam, response: { 200: JobSchema, ...errors(400, 401, 403, 404, 422) } },
    handler: (req) => runner.get(req.params.id),
  });
  r.post('/admin/jobs/sample', {
    onRequest: hooks.admin,
    schema: {
      tags,
      security,
      description: 'Starts a job that counts to `count` with progress, and fails on request: it proves the job runner end to end. Answers 202 with the job id to poll at /admin/jobs/{id}.',
      summary: 'Start the sample job (counts to `count`, can fail on request): a self-test of the job machinery',
      body: SampleJobBody,
      response: { 202: JobStartedSchema, ...errors(400, 401, 403, 413, 422) },
    },
    handler: async (req, reply) => reply.status(202).send({ job_id: await runner.start('sample', req.body) }),
  });
}
