import { sql } from 'kysely';
import type { Kysely } from 'kysely';
import { describe, expect, it } from 'vitest';
import { createDb } from '../db/database.js';
import { createSchema, HISTORY } from '../db/migrate.js';
import { loadModuleList } from './module-list.js';
import { loadSchema, schemaOf } from './schema.js';

const noteMigration = {
  up: async (db: Kysely<unknown>) => void (await db.schema.createTable('notes_probe').addColumn('id', 'integer', (c) => c.primaryKey()).execute()),
  down: async (db: Kysely<unknown>) => void (await db.schema.dropTable('notes_probe').execute()),
};

describe("the schema: the history and each module's migrations", () => {
  it("this version's schema is the module list's: the history's names stay as they are, in order", async () => {
    const schema = await loadSchema();
    expect(schema).toEqual(expect.objectContaining({ names: schemaOf(await loadModuleList()).names }));
    expect(schema.names.filter((n) => n in HISTORY)).toEqual(Object.keys(HISTORY));
    expect(schema.latest).toBe([...schema.names].sort().at(-1));
  });

  it("a module's migration is found through its manifest, run after the history, and is the latest", async () => {
    const schema = createSchema([{ owner: 'notes', migrations: { '0099_notes_probe': async () => noteMigration } }]);
    expect(schema.latest).toBe('0099_notes_probe');
    const db = createDb('sqlite://');
    try {
      const applied = await schema.migrateToLatest(db);
      expect(applied).toEqual([...Object.keys(HISTORY), '0099_notes_probe']);
      expect(await schema.version(db)).toBe('0099_notes_probe');
      await sql`insert into notes_probe (id) values (1)`.execute(db);
      expect(await schema.migrateToLatest(db)).toEqual([]);
    } finally {
      await db.destroy();
    }
  });

  it('a number already taken, or a name that is no <4 digits>_<words>, is refused naming both owners', () => {
    expect(() => createSchema([{ owner: 'notes', migrations: { '0011_notes': async () => noteMigration } }])).toThrow(
      'migration 0011_notes of module notes: number 0011 is taken by 0011_dns (src/db/migrations); take the next free number',
    );
    const twice: Parameters<typeof createSchema>[0] = [
      { owner: 'a', migrations: { '0100_a': async () => noteMigration } },
      { owner: 'b', migrations: { '0100_b': async () => noteMigration } },
    ];
    expect(() => createSchema(twice)).toThrow('migration 0100_b of module b: number 0100 is taken by 0100_a (module a)');
    expect(() => createSchema([{ owner: 'notes', migrations: { 'notes-table': async () => noteMigration } }])).toThrow(/a name is <4 digits>_<lowercase words>/);
  });
});
