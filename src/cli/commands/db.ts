import type { Command } from 'commander';
import { output } from '../output.js';

export function dbCommands(program: Command): void {
  program
    .command('db')
    .description('the database')
    .command('migrate')
    .description('apply pending schema migrations (also done at every start)')
    .option('--json', 'print the result as JSON')
    .action(async (opts: { json?: boolean }) => {
      const [{ loadSettings }, { createDb }, { loadSchema }] = await Promise.all([
        import('../../config/settings.js'),
        import('../../db/database.js'),
        import('../../app/schema.js'),
      ]);
      const schema = await loadSchema();
      const db = createDb(loadSettings().databaseUrl);
      try {
        const applied = await schema.migrateToLatest(db);
        const version = await schema.version(db);
        output(opts.json, { applied, schema_version: version }, () =>
          applied.length === 0 ? `Schema is up to date (${version}).` : `Applied: ${applied.join(', ')}. Schema is now ${version}.`,
        );
      } finally {
        await db.destroy();
      }
    });
}
