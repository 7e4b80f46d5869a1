import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { ADMIN_SECURITY as security } from '../route-types.js';
import type { RouteKit } from '../route-types.js';
import { DomainParam } from '../domain-param.schema.js';
import type { DkimService } from './dkim.service.js';
import type { DnsPlanService } from './plan.service.js';
import { DeliverabilityBody, DeliverabilityReportSchema, DkimBody, DkimResultSchema, DnsPlanSchema, PlanQuery } from './schema.js';
import { JobStartedSchema } from '../jobs/index.js';
import type { JobRunner } from '../jobs/index.js';
import type { DeliverabilityService } from './deliverability.service.js';
import type { RotationService } from './rotation.service.js';
import { AppError } from '../../shared/errors.js';

/** DKIM keys and the DNS plan of a domain. API-key scope `dns`. */
export function dnsRoutes(app: FastifyInstance, m: { dkim: DkimService; plan: DnsPlanService; deliverability: DeliverabilityService; jobs: JobRunner | undefined; rotation: RotationService }, kit: RouteKit): void {
  const r = app.withTypeProvider<TypeBoxTypeProvider>();
  const { hooks, errors } = kit;
  const tags = ['dns'];
  const config = { scope: 'dns' as const };

  r.post('/domains/:domain/dkim', {
    onRequest: hooks.admin,
    config: { ...config, bodyOptional: true },
    schema: {
      tags, security, params: DomainParam, body: DkimBody,
      summary: 'Make the first DKIM keys of a domain, or rotate them',
      description: 'No key yet: makes an RSA key (size: the limit dkim-key-bits) with a dated selector, and an Ed25519 key beside it when asked; the private keys are sealed and never returned; the key files and signing configuration of Rspamd are written by the root helper, checked and reloaded so the domain is signed at once (201; 503 when the helper cannot be reached, and then no key is kept). Keys already: starts or advances the rotation (200, with rotation): the new key signs only once every authoritative server answers its record and the TTL they publish for it has passed.',
      response: { 200: DkimResultSchema, 201: DkimResultSchema, ...errors(400, 401, 403, 404, 409, 422, 502, 503) },
    },
    handler: async (req, reply) => {
      const keys = await m.dkim.keys(req.params.domain);
      if (keys.length === 0) return reply.status(201).send(await m.dkim.generate(req.params.domain, req.body ?? {}));
      const rotation = await m.rotation.rotate(req.params.domain);
      return reply.status(200).send({ domain: rotation.domain, keys: await m.dkim.keys(rotation.domain), signing: { status: 'unchanged', detail: 'see rotation', reloaded: false }, rotation });
    },
  });

  r.get('/domains/:domain/dns-plan', {
    onRequest: hooks.admin,
    config,
    schema: {
      tags, security, params: DomainParam, querystring: PlanQuery,
      summary: 'Every DNS record the domain needs, with its purpose and as zone-file lines',
      description: 'MX, A/AAAA of the mail host, SPF, DKIM (TXT split into 255-byte strings in the zone lines), DMARC, MTA-STS TXT and policy, TLS-RPT, the SRS domain\'s SPF when MAILSVC_SRS_DOMAIN differs, and the PTR to ask the IP\'s owner for.',
      response: { 200: DnsPlanSchema, ...errors(400, 401, 403, 404, 422) },
    },
    handler: (req) => m.plan.plan(req.params.domain, req.query.mail_host, req.query.public_ip),
  });

  r.post('/domains/:domain/deliverability', {
    onRequest: hooks.admin,
    config,
    schema: {
      tags, security, params: DomainParam, body: DeliverabilityBody,
      summary: 'Start a deliverability check of the domain (a job)',
      description: 'Runs every check in parallel (MX, A/AAAA, SPF, DMARC, DKIM, PTR when public_ip is given, MTA-STS record and policy, TLS-RPT, the HTTPS health endpoint, SMTP STARTTLS) against the domain\'s authoritative servers; answers 202 {job_id}; GET /admin/jobs/{id} gives the report as its result. Saved as a report unless save is false.',
      response: { 202: JobStartedSchema, ...errors(400, 401, 403, 404, 422) },
    },
    handler: async (req, reply) => {
      if (!m.jobs) throw new AppError('unavailable', 'jobs are not available in this process');
      const { name } = await m.plan.domain(req.params.domain);
      const id = await m.jobs.start('deliverability', { domain: name, mail_host: req.body.mail_host, public_ip: req.body.public_ip, save: req.body.save ?? true });
      return reply.status(202).send({ job_id: id });
    },
  });

  r.get('/domains/:domain/deliverability', {
    onRequest: hooks.admin,
    config,
    schema: {
      tags, security, params: DomainParam,
      summary: 'The newest saved deliverability report of the domain',
      description: 'Each check with pass, fail or unknown (could not determine), what to fix, and what changed since the report before it. 404 until a report was saved.',
      response: { 200: DeliverabilityReportSchema, ...errors(400, 401, 403, 404) },
    },
    handler: (req) => m.deliverability.latest(req.params.domain),
  });
}
