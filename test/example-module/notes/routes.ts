import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { ADMIN_SECURITY as security } from '../route-types.js';
import type { RouteKit } from '../route-types.js';
import type { NoteService } from './note.service.js';
import { DomainParams, NoteBody, NoteParams, NoteSchema } from './schema.js';

/** Loaded only when the HTTP service registers the module's routes. */
export function noteRoutes(app: FastifyInstance, notes: NoteService, { hooks, errors }: RouteKit): void {
  const r = app.withTypeProvider<TypeBoxTypeProvider>();
  const tags = ['notes'];
  // Admin routes: the admin hooks, and the scope an API key needs to change them (every GET needs only `read`).
  const onRequest = hooks.admin;
  const config = { scope: 'accounts' as const };
  r.post('/domains/:domain/notes', {
    onRequest,
    config,
    schema: {
      tags, security, summary: 'Add a note to a domain',
      description: 'Keeps a note (1 to 500 characters) about a domain; the answer holds the id the database gave it. An unknown domain is 404.',
      params: DomainParams, body: NoteBody, response: { 201: NoteSchema, ...errors(400, 401, 403, 404, 422) },
    },
    handler: async (req, reply) => reply.status(201).send(await notes.add(req.params.domain, req.body.text)),
  });
  r.get('/domains/:domain/notes', {
    onRequest,
    config,
    schema: {
      tags, security, summary: "A domain's notes", description: 'Every note of the domain, oldest first.',
      params: DomainParams, response: { 200: Type.Array(NoteSchema), ...errors(400, 401, 403, 404) },
    },
    handler: (req) => notes.list(req.params.domain),
  });
  r.delete('/domains/:domain/notes/:id', {
    onRequest,
    config,
    schema: {
      tags, security, summary: 'Delete a note', description: 'Deletes one note of the domain; a note that is not there is 404.',
      params: NoteParams, response: { 204: Type.Null(), ...errors(400, 401, 403, 404) },
    },
    handler: async (req, reply) => {
      await notes.remove(req.params.domain, req.params.id);
      return reply.status(204).send(null);
    },
  });
}
