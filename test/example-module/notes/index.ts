import type { FastifyInstance } from 'fastify';
import type { Infra } from '../../infra/index.js';
import type { DomainLookup } from '../domains/index.js';
import type { RouteKit } from '../route-types.js';
import { NoteRepository } from './note.repository.js';
import { NoteService } from './note.service.js';

export type { NoteService } from './note.service.js';
export type { NoteView } from './schema.js';

/** The module's public door: what other code may use of it. It receives only the parts of Infra it uses. */
export function createNotesModule(infra: Pick<Infra, 'db' | 'dialect' | 'clock'>, deps: { domains: DomainLookup }) {
  const service = new NoteService(new NoteRepository(infra.db, infra.dialect), deps.domains, infra.clock);
  return {
    service,
    routes: async (app: FastifyInstance, kit: RouteKit) => (await import('./routes.js')).noteRoutes(app, service, kit),
  };
}
export type NotesModule = ReturnType<typeof createNotesModule>;
