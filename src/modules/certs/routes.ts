import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { ADMIN_SECURITY as security } from '../route-types.js';
import type { RouteKit } from '../route-types.js';
import { JobStartedSchema } from '../jobs/index.js';
import type { CertService } from './cert.service.js';
import { CertDetailSchema, CertListSchema, CertParams, CertSchema, IssueBody, RenewBody, RevokeBody } from './schema.js';
import type { IssueJobInput, RenewJobInput } from './schema.js';

/** Starts the issue and renew jobs after refusing bad input and a certificate busy elsewhere (index.ts). */
type CertJobs = { startIssue(input: IssueJobInput): Promise<string>; startRenew(input: RenewJobInput): Promise<string> };

/** /admin/certs: the certificates mailsvc issues with ACME (docs/certs.md). */
export function certRoutes(app: FastifyInstance, certs: CertService, jobs: CertJobs, { hooks, errors }: RouteKit): void {
  const r = app.withTypeProvider<TypeBoxTypeProvider>();
  const tags = ['certs'];
  const onRequest = hooks.admin;
  const config = { scope: 'settings' as const };
  r.get('/admin/certs', {
    onRequest,
    config,
    schema: {
      tags, security, summary: 'The certificates',
      description: 'Every certificate mailsvc keeps: its names, state (none, valid, expiring within the alarm days, expired, revoked), validity, when it renews (ARI window or two thirds of its lifetime), the last attempt and the last on-the-wire proof.',
      response: { 200: CertListSchema, ...errors(401, 403) },
    },
    handler: async () => {
      const items = await certs.list();
      return { items, total: items.length, limit: items.length, offset: 0 };
    },
  });
  r.get('/admin/certs/:name', {
    onRequest,
    config,
    schema: {
      tags, security, summary: 'One certificate',
      description: 'The certificate with its chain in PEM (public). The private key is never answered. An unknown name is 404.',
      params: CertParams, response: { 200: CertDetailSchema, ...errors(401, 403, 404) },
    },
    handler: (req) => certs.show(req.params.name),
  });
  r.post('/admin/certs/issue', {
    onRequest,
    config: { ...config, bodyOptional: true },
    schema: {
      tags, security, summary: 'Issue a certificate now (a job): 202 with the job id',
      description:
        "Orders a certificate from the ACME CA for the configured names (or those given, each one of this server's), answers the challenges, deploys it and proves on the wire that every TLS port serves it, as a job (kind cert-issue): follow it at GET /admin/jobs/{id}. Until it is proven the previous certificate stays in service. Refused before any job is queued: a name not ours or no mail host name 400, a malformed body 422, another issue or renewal of the certificate running (the API's, the CLI's or the timer's) 409 naming it. The job's result is the certificate; a failed job's message is the error line and its result {\"error\": {\"code\", \"retry_after\"}}: rate_limited (the CA's rate limit, with its Retry-After in seconds), unavailable (the CA cannot be reached), upstream (a refused challenge or an unproven deployment).",
      body: Type.Optional(IssueBody), response: { 202: JobStartedSchema, ...errors(400, 401, 403, 409, 422) },
    },
    handler: async (req, reply) => reply.status(202).send({ job_id: await jobs.startIssue({ name: req.body?.name ?? 'mail', names: req.body?.names, new_key: req.body?.new_key }) }),
  });
  r.post('/admin/certs/renew', {
    onRequest,
    config: { ...config, bodyOptional: true },
    schema: {
      tags, security, summary: 'Renew the certificates that are due (a job): 202 with the job id',
      description: "The timer's check as a job (kind cert-renew; follow it at GET /admin/jobs/{id}): each certificate is renewed when due (inside the CA's ARI window, else after two thirds of its lifetime), a failed one again after its backoff; force renews now. The job's result lists what was renewed, skipped or failed and why (CertificateRenewal items). Refused before any job is queued: an unknown certificate 404, a malformed body 422, an issue or renewal of one of the certificates running now 409 naming it.",
      body: Type.Optional(RenewBody), response: { 202: JobStartedSchema, ...errors(400, 401, 403, 404, 409, 422) },
    },
    handler: async (req, reply) => reply.status(202).send({ job_id: await jobs.startRenew({ name: req.body?.name, force: req.body?.force }) }),
  });
  r.post('/admin/certs/:name/revoke', {
    onRequest,
    config: { ...config, bodyOptional: true },
    schema: {
      tags, security, summary: 'Revoke a certificate',
      description: 'Revokes the certificate in service at the CA (RFC 5280 reason code, default 0). The next renewal issues a new one with a new key. Not issued yet is 404, already revoked 409.',
      params: CertParams, body: Type.Optional(RevokeBody), response: { 200: CertSchema, ...errors(400, 401, 403, 404, 409, 422, 502, 503) },
    },
    handler: (req) => certs.revoke(req.params.name, req.body?.reason ?? 0),
  });
}
