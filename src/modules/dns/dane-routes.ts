import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { ADMIN_SECURITY as security } from '../route-types.js';
import type { RouteKit } from '../route-types.js';
import type { DaneService } from './dane.service.js';

export const DaneStateSchema = Type.Object(
  {
    mail_host: Type.String(),
    state: Type.Union([Type.Literal('idle'), Type.Literal('publishing-next'), Type.Literal('awaiting-visibility'), Type.Literal('waiting-ttl'), Type.Literal('ready-to-deploy'), Type.Literal('retiring-old')], { description: 'idle, publishing-next, awaiting-visibility, waiting-ttl, ready-to-deploy, retiring-old (docs/dns.md, DANE)' }),
    current_spki: Type.String({ description: 'SHA-256 (hex) of the public key port 25 serves' }),
    next_spki: Type.Union([Type.String(), Type.Null()], { description: 'the next certificate key\'s, during a key change' }),
    records: Type.Array(Type.String(), { description: 'the TLSA values published at _25._tcp.<mail host>, e.g. "3 1 1 <hex>"' }),
    deploy_allowed: Type.Boolean({ description: 'true only in ready-to-deploy: the new certificate may go on port 25' }),
    waiting: Type.Union([Type.String(), Type.Null()], { description: 'what the key change waits for now' }),
    wait_until: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
    last_error: Type.Union([Type.String(), Type.Null()]),
    updated_at: Type.String({ format: 'date-time' }),
  },
  { title: 'DaneState' },
);

const HostParam = Type.Object({ host: Type.String({ minLength: 1, maxLength: 253, description: 'the mail host name, e.g. mail.example.org' }) });

/** The DANE keys of the mail hosts: GET /dns/dane, GET /dns/dane/{host}, POST /dns/dane/{host}/advance. API-key scope `dns`. */
export function daneRoutes(app: FastifyInstance, dane: DaneService, kit: RouteKit): void {
  const r = app.withTypeProvider<TypeBoxTypeProvider>();
  const { hooks, errors } = kit;
  const tags = ['dns'];
  const config = { scope: 'dns' as const };

  r.get('/dns/dane', {
    onRequest: hooks.admin,
    config,
    schema: {
      tags, security,
      summary: 'The DANE key of every mail host mailsvc keeps one of',
      description: 'Each mail host\'s TLSA 3 1 1 records (the SHA-256 of the key port 25 serves, and the next key\'s during a key change), the state of the key change and what it waits for.',
      response: { 200: Type.Array(DaneStateSchema), ...errors(401, 403, 429) },
    },
    handler: () => dane.list(),
  });

  r.get('/dns/dane/:host', {
    onRequest: hooks.admin,
    config,
    schema: {
      tags, security, params: HostParam,
      summary: 'The DANE key of a mail host and its key change',
      description: '404 until mailsvc keeps a DANE key of the host (set when it issues the host\'s certificate, or with mailsvc dns dane adopt).',
      response: { 200: DaneStateSchema, ...errors(400, 401, 403, 404, 429) },
    },
    handler: (req) => dane.status(req.params.host),
  });

  r.post('/dns/dane/:host/advance', {
    onRequest: hooks.admin,
    config: { ...config, bodyOptional: true },
    schema: {
      tags, security, params: HostParam,
      summary: 'Take the DANE key change of a mail host as far as it can go now',
      description: 'The next key\'s record published, then answered by every authoritative server of the host\'s zone beside the current one, then their TTL passed: ready-to-deploy, the only state in which the new certificate may be deployed. Safe to call at any time; an idle host stays idle.',
      response: { 200: DaneStateSchema, ...errors(400, 401, 403, 404, 429, 502, 503) },
    },
    handler: (req) => dane.advance(req.params.host),
  });
}
