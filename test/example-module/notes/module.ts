import { defineModule } from '../module-types.js';
import { noteCommands } from './commands.js';
import type { NotesModule } from './index.js';

declare module '../module-types.js' {
  interface ModuleRegistry {
    notes: NotesModule;
  }
}

/** What the notes module adds to mailsvc; src/app/module-list.ts has one line for it. */
export default defineModule({
  name: 'notes',
  doc: 'docs/architecture.md',
  migrations: { '0030_domain_notes': () => import('./migrations/0030_domain_notes.js') },
  http: true,
  build: async (ctx) => {
    const [{ createNotesModule }, domains] = await Promise.all([import('./index.js'), ctx.get('domains')]);
    return createNotesModule(ctx.infra, { domains: domains.service });
  },
  commands: (program, cli) => noteCommands(program, cli.run()),
  listens: {
    // A deleted domain's notes go with it, in the same transaction.
    'domain.deleting': async (ctx) => {
      const { service } = await ctx.get('notes');
      return { within: (tx, domain) => service.forgetDomain(tx, domain.id) };
    },
  },
});
