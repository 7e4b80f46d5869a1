import type { Command } from 'commander';
import { loadSettings } from '../../config/settings.js';
import { createDb } from '../../db/database.js';
import { migrateToLatest, schemaVersion } from '../../db/migrate.js';
import { output } from '../output.js';

export function dbCommands(program: Command): void {
  program
    .command('db')
    .description('the database')
    .command('migrate')
    .description('apply pending schema migrations (also done at every start)')
    .option('--json', 'print the result as JSON')
    .action(async (opts: { json?: boolean }) => {
      const db = createDb(loadSettings().databaseUrl);
      try {
        const applied = await migrateToLatest(db);
        const version = await schemaVersion(db);
        output(opts.json, { applied, schema_version: version }, () =>
          applied.length === 0 ? `Schema is up to date (${version}).` : `Applied: ${applied.join(', ')}. Schema is now ${version}.`,
        );
      } finally {
        await db.destroy();
      }
    });
}
