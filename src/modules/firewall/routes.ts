import type { FastifyInstance, FastifyRequest } from 'fastify';
import { parseLooseNet } from '../../shared/ip-net.js';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { ADMIN_SECURITY as security } from '../route-types.js';
import type { AdminHooks, RouteErrors } from '../route-types.js';
import { FirewallBody, FirewallSchema, ForceQuery } from './schema.js';
import type { FirewallCaller, FirewallService, RevertScheduler } from './firewall.service.js';

const canonical = (ip: string | undefined): string | null => (ip ? (parseLooseNet(ip)?.text ?? null) : null);
const header = (v: string | string[] | undefined): string | undefined => (Array.isArray(v) ? v[0] : v);

/**
 * The administrator the guard protects, and how they reached the API. Through
 * a trusted proxy (MAILSVC_TRUSTED_PROXIES: clientIp is then the forwarded
 * address) the port to keep open is the proxy's: X-Forwarded-Port, else 80
 * for X-Forwarded-Proto http, else 443. An X-Forwarded-For from a loopback
 * peer that is not trusted hides who asks.
 */
export function callerOf(req: FastifyRequest): FirewallCaller {
  const socket = canonical(req.socket.remoteAddress);
  const forwarded = header(req.headers['x-forwarded-for']) !== undefined;
  if (!forwarded || socket === null) return { address: req.clientIp, via: 'api' };
  // Fastify lists the socket's address and every trusted hop behind it: more than one means the proxy was trusted.
  if ((req.ips?.length ?? 0) > 1) {
    const p = Number(header(req.headers['x-forwarded-port']));
    const port = Number.isInteger(p) && p > 0 && p < 65536 ? p : header(req.headers['x-forwarded-proto']) === 'http' ? 80 : 443;
    return { address: req.clientIp, via: 'proxy', port };
  }
  const loopback = (parseLooseNet(socket)?.addr as { range(): string } | undefined)?.range() === 'loopback';
  return loopback ? { via: 'untrusted-proxy' } : { address: req.clientIp, via: 'api' };
}

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
      summary: "Change and apply the firewall; a ruleset closing SSH, or the way the caller came (the API port, or the trusted proxy's port), to the caller is 409 unless force=true, and a forced one reverts unless confirmed",
      description: 'The rules compile into the one mailsvc table, checked with nft -c and applied as one transaction; no other table is touched.',
      querystring: ForceQuery, body: FirewallBody, response: { 200: FirewallSchema, ...errors(400, 401, 403, 409, 422, 502, 503) },
    },
    handler: (req) => fw.set(req.body, callerOf(req), req.query.force === 'true', schedule),
  });
  r.post('/admin/firewall/confirm', {
    onRequest: hooks.admin,
    config: { scope: 'firewall', reauth: true },
    schema: { tags, security, summary: 'Keep a forced firewall change (409 when none waits)', description: 'Cancels the automatic revert of the last forced ruleset.', response: { 200: FirewallSchema, ...errors(401, 403, 409) } },
    handler: () => fw.confirm(),
  });
}
