import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { ADMIN_SECURITY as security } from '../route-types.js';
import type { RouteKit } from '../route-types.js';
import { DomainParam } from '../domain-param.schema.js';
import type { CloudflareSyncService } from './cloudflare-sync.service.js';
import { DnsSyncBody, DnsSyncSchema, SyncResultSchema, SyncRunBody } from './schema.js';

/** The DNS provider sync of a domain (Cloudflare). The token is write-only. API-key scope `dns`. */
export function dnsSyncRoutes(app: FastifyInstance, cf: CloudflareSyncService, kit: RouteKit): void {
  const r = app.withTypeProvider<TypeBoxTypeProvider>();
  const { hooks, errors } = kit;
  const tags = ['dns'];
  const config = { scope: 'dns' as const };

  r.get('/domains/:domain/dns-sync', {
    onRequest: hooks.admin,
    config,
    schema: { tags, security, params: DomainParam, summary: 'The DNS provider sync settings of the domain', description: 'Zone id, whether a token is stored (never the token), automatic sync on or off, and the last sync. 404 when none is set up.', response: { 200: DnsSyncSchema, ...errors(400, 401, 403, 404) } },
    handler: (req) => cf.get(req.params.domain),
  });

  r.put('/domains/:domain/dns-sync', {
    onRequest: hooks.admin,
    config: { ...config, mfaVerified: true },
    schema: {
      tags, security: [{ bearer: [] }], params: DomainParam, body: DnsSyncBody,
      summary: 'Store the Cloudflare zone id and API token of the domain',
      description: 'The token is checked against the zone (GET /zones/{id}; the zone must hold the domain) before anything is stored, then sealed. It is never returned. A refused token or unknown zone is 400.',
      response: { 200: DnsSyncSchema, ...errors(400, 401, 403, 404, 422, 502) },
    },
    handler: (req) => cf.configure(req.params.domain, { zoneId: req.body.zone_id, token: req.body.api_token, enabled: req.body.enabled ?? false }),
  });

  r.post('/domains/:domain/dns-sync/run', {
    onRequest: hooks.admin,
    config: { ...config, bodyOptional: true },
    schema: {
      tags, security, params: DomainParam, body: SyncRunBody,
      summary: 'Sync the domain\'s DKIM records into its Cloudflare zone',
      description: 'Creates, updates or deletes only the TXT records tagged mailsvc:dkim so that the zone holds the DKIM record of each published key, never proxied; a record mailsvc does not own is skipped. With dry_run the diff is answered and nothing changes; otherwise the records are read back. Idempotent: a second run changes nothing.',
      response: { 200: SyncResultSchema, ...errors(400, 401, 403, 404, 422, 502) },
    },
    handler: (req) => cf.syncDkim(req.params.domain, { dryRun: req.body?.dry_run === true }),
  });
}
