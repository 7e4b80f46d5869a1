import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { ADMIN_SECURITY as security } from '../route-types.js';
import type { AdminHooks, RouteErrors } from '../route-types.js';
import { FirewallBody, FirewallSchema, ForceQuery } from './schema.js';
import type { FirewallService, RevertScheduler } from './firewall.service.js';

export function firewallRoutes(app: FastifyInstance, fw: FirewallService, schedule: RevertScheduler, hooks: AdminHooks, errors: RouteErrors): void {
  const r = app.withTypeProvider<TypeBoxTypeProvider>();
  const tags = ['firewall'];
  r.get('/admin/firewall', {
    onRequest: hooks.admin,
    config: { scope: 'firewall' },
    schema: { tags, security, summary: "The firewall settings (mailsvc's nftables table)", description: 'firewall-enabled and firewall-rules-json as stored, with a forced change that still waits for confirmation.', response: { 200: FirewallSchema, ...errors(401, 403) } },
    handler: () => fw.get(),
  });
  r.put('/admin/firewall', {
    onRequest: hooks.admin,
    config: { scope: 'firewall', reauth: true },
    schema: {
      tags, security,
      summary: "Change and apply the firewall; a ruleset closing SSH or the API to the caller is 409 unless force=true, and a forced one reverts unless confirmed",
      description: 'The rules compile into the one mailsvc table, checked with nft -c and applied as one transaction; no other table is touched.',
      querystring: ForceQuery, body: FirewallBody, response: { 200: FirewallSchema, ...errors(400, 401, 403, 409, 422, 502, 503) },
    },
    handler: (req) => fw.set(req.body, req.clientIp, req.query.force === 'true', schedule),
  });
  r.post('/admin/firewall/confirm', {
    onRequest: hooks.admin,
    config: { scope: 'firewall', reauth: true },
    schema: { tags, security, summary: 'Keep a forced firewall change (409 when none waits)', description: 'Cancels the automatic revert of the last forced ruleset.', response: { 200: FirewallSchema, ...errors(401, 403, 409) } },
    handler: () => fw.confirm(),
  });
}
