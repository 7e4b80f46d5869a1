import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { ADMIN_SECURITY as security } from '../route-types.js';
import type { AdminHooks, RouteErrors } from '../route-types.js';
import type { PortalAccessService } from './access.service.js';
import { AccessBody, AccessResult, DomainParam, MailboxParam, PortalAccessSchema } from './schema.js';

/** The administrator's switch of self-service per domain and per mailbox (served whether the portal is on or not). */
export function portalAccessRoutes(app: FastifyInstance, access: PortalAccessService, hooks: AdminHooks, errors: RouteErrors): void {
  const r = app.withTypeProvider<TypeBoxTypeProvider>();
  const tags = ['portal'];
  const onRequest = hooks.admin;
  const config = { scope: 'accounts' as const };
  r.get('/portal-access', {
    onRequest, config,
    schema: { tags, security, summary: 'Where self-service is switched off', description: 'The domains and mailboxes whose users the user portal refuses (everything else may use it when MAILSVC_ENABLE_USER_PORTAL=yes).', response: { 200: PortalAccessSchema, ...errors(401, 403) } },
    handler: () => access.list(),
  });
  r.put('/portal-access/domains/:name', {
    onRequest, config,
    schema: { tags, security, summary: 'Switch self-service on or off for a domain', description: 'With self_service false, every mailbox of the domain is refused by the user portal, and its open portal sessions end at their next request.', params: DomainParam, body: AccessBody, response: { 200: AccessResult, ...errors(400, 401, 403, 404, 422) } },
    handler: (req) => access.setDomain(req.params.name, req.body.self_service),
  });
  r.put('/portal-access/mailboxes/:address', {
    onRequest, config,
    schema: { tags, security, summary: 'Switch self-service on or off for a mailbox', description: 'With self_service false, the user portal refuses this mailbox, and its open portal sessions end at their next request.', params: MailboxParam, body: AccessBody, response: { 200: AccessResult, ...errors(400, 401, 403, 404, 422) } },
    handler: (req) => access.setMailbox(req.params.address, req.body.self_service),
  });
}
