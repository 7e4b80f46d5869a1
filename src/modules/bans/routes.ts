import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { ADMIN_SECURITY as security } from '../route-types.js';
import type { AdminHooks, RouteErrors } from '../route-types.js';
import { PagedOf, PageQuery, pageOf } from '../paging.schema.js';
import { BanBody, BanParam, BanSchema, BanSortQuery } from './schema.js';
import type { BanService } from './ban.service.js';

export function banRoutes(app: FastifyInstance, bans: BanService, hooks: AdminHooks, errors: RouteErrors): void {
  const r = app.withTypeProvider<TypeBoxTypeProvider>();
  const tags = ['bans'];
  r.get('/admin/bans', {
    onRequest: hooks.admin,
    config: { scope: 'bans' },
    schema: {
      tags, security, summary: 'Banned addresses: one entry per address, merging every fail2ban jail that holds it',
      description: 'Read from every active jail (fail2ban-client status, then each jail with its ban times); the reason is the one given to mailsvc, null for bans fail2ban made itself. `q` keeps the addresses that contain a text, `jail` the bans one jail holds (`total` counts those). By address (IPv4 first) unless `sort` names another order; an unknown time (null) sorts as the latest.',
      querystring: Type.Object({
        ...PageQuery,
        q: Type.Optional(Type.String({ maxLength: 64, description: 'part of the address or network (hex digits, dots, colons, slash), case-insensitive' })),
        jail: Type.Optional(Type.String({ maxLength: 64, description: 'only the bans this jail holds, e.g. sshd' })),
        sort: BanSortQuery,
      }), response: { 200: PagedOf(BanSchema, 'BanPage'), ...errors(400, 401, 403, 422, 502, 503) },
    },
    handler: (req) => bans.list(pageOf(req.query), { q: req.query.q, jail: req.query.jail }, req.query.sort),
  });
  r.post('/admin/bans', {
    onRequest: hooks.admin,
    config: { scope: 'bans' },
    schema: {
      tags, security,
      summary: "Ban an address or network in every active jail (never loopback, this host, a trusted proxy, fail2ban's ignoreip or the caller's own address)",
      description: 'An IPv4 or IPv6 address, or a network no wider than /24 (IPv4) or /64 (IPv6); refused with 422 saying why when the safety rule holds it back.',
      body: BanBody, response: { 201: BanSchema, ...errors(400, 401, 403, 409, 422, 502, 503) },
    },
    handler: async (req, reply) => {
      const subject = req.admin?.subject ?? 'admin';
      return reply.status(201).send(await bans.ban(req.body.ip, req.body.reason, { subject, address: req.clientIp }));
    },
  });
  r.delete('/admin/bans/:ip', {
    onRequest: hooks.admin,
    config: { scope: 'bans' },
    schema: { tags, security, summary: 'Lift a ban in every jail that holds it (404 when none does)', description: 'Removes the address from every jail, then asks fail2ban that none still holds it.', params: BanParam, response: { 204: Type.Null(), ...errors(400, 401, 403, 404, 422, 502, 503) } },
    handler: async (req, reply) => {
      await bans.unban(req.params.ip);
      return reply.status(204).send(null);
    },
  });
}
