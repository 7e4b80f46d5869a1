import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { ADMIN_SECURITY as security } from '../route-types.js';
import type { RouteKit } from '../route-types.js';
import { DomainParam } from '../domains/index.js';
import type { DkimService } from './dkim.service.js';
import type { DnsPlanService } from './plan.service.js';
import { DkimBody, DkimResultSchema, DnsPlanSchema, PlanQuery } from './schema.js';

/** DKIM keys and the DNS plan of a domain. API-key scope `dns`. */
export function dnsRoutes(app: FastifyInstance, m: { dkim: DkimService; plan: DnsPlanService }, kit: RouteKit): void {
  const r = app.withTypeProvider<TypeBoxTypeProvider>();
  const { hooks, errors } = kit;
  const tags = ['dns'];
  const config = { scope: 'dns' as const };

  r.post('/domains/:domain/dkim', {
    onRequest: hooks.admin,
    config: { ...config, bodyOptional: true },
    schema: {
      tags, security, params: DomainParam, body: DkimBody,
      summary: 'Make the first DKIM keys of a domain and sign its mail with them',
      description: 'Makes an RSA key (size: the limit dkim-key-bits) with a dated selector, and an Ed25519 key beside it when asked; the private keys are sealed and never returned. Rspamd is rendered, checked and reloaded so the domain is signed at once; publish record_value at record_name. A domain that already has keys is 409 (rotate them).',
      response: { 201: DkimResultSchema, ...errors(400, 401, 403, 404, 409, 422) },
    },
    handler: async (req, reply) => reply.status(201).send(await m.dkim.generate(req.params.domain, req.body ?? {})),
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
}
