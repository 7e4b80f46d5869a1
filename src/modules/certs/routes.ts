import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { ADMIN_SECURITY as security } from '../route-types.js';
import type { RouteKit } from '../route-types.js';
import type { CertService } from './cert.service.js';
import { CertDetailSchema, CertListSchema, CertParams, CertSchema, IssueBody, RenewBody, RenewOutcomeSchema, RevokeBody } from './schema.js';

/** /admin/certs: the certificates mailsvc issues with ACME (docs/certs.md). */
export function certRoutes(app: FastifyInstance, certs: CertService, { hooks, errors }: RouteKit): void {
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
      tags, security, summary: 'Issue a certificate now',
      description:
        "Orders a certificate from the ACME CA for the configured names (or those given, each one of this server's), answers the challenges, deploys it and proves on the wire that every TLS port serves it. Until it is proven the previous certificate stays in service. A name not ours is 400; a CA rate limit 429 with Retry-After; a CA that cannot be reached 503; a refused challenge or an unproven deployment 502.",
      body: Type.Optional(IssueBody), response: { 200: CertSchema, ...errors(400, 401, 403, 409, 422, 429, 502, 503) },
    },
    handler: (req) => certs.issue(req.body?.name ?? 'mail', { names: req.body?.names, newKey: req.body?.new_key }),
  });
  r.post('/admin/certs/renew', {
    onRequest,
    config: { ...config, bodyOptional: true },
    schema: {
      tags, security, summary: 'Renew the certificates that are due',
      description: "The timer's check: each certificate is renewed when due (inside the CA's ARI window, else after two thirds of its lifetime), a failed one again after its backoff; force renews now. The answer lists what was renewed, skipped or failed and why.",
      body: Type.Optional(RenewBody), response: { 200: Type.Array(RenewOutcomeSchema), ...errors(400, 401, 403, 404, 422) },
    },
    handler: (req) => certs.renew({ name: req.body?.name, force: req.body?.force }),
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
