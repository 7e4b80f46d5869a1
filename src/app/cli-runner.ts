import type { Run } from '../modules/command-types.js';
import { CliError } from '../shared/terminal/output.js';
import type { Modules } from './modules.js';

export type RunOptions = {
  /** Check that the database is migrated before running (every command that reads or writes it). */
  schema?: boolean;
};

/**
 * A module's command at work: the settings, the infrastructure and the one
 * module it asked for are loaded and built when the command runs (never for
 * `--help`), and closed afterwards. Logs go to stderr so that stdout holds
 * only the result (--json stays parseable), below warn only when
 * MAILSVC_LOG_LEVEL asks for it.
 */
export function runModule<M>(pick: (modules: Modules) => Promise<M>, opts: RunOptions = {}): Run<M> {
  return async (fn) => {
    const [{ loadSettings }, { createInfra, stderrLogger }, { Modules }] = await Promise.all([
      import('../config/settings.js'),
      import('../infra/index.js'),
      import('./modules.js'),
    ]);
    const settings = loadSettings();
    const level = process.env.MAILSVC_LOG_LEVEL ? settings.logLevel : 'warn';
    const infra = createInfra(settings, { log: () => stderrLogger(level) });
    try {
      if (opts.schema !== false) {
        const { LATEST_SCHEMA, appliedSchema } = await import('../db/migrate.js');
        const applied = await appliedSchema(infra.db);
        if (applied !== LATEST_SCHEMA) {
          throw new CliError(
            `the database (${settings.databaseUrl.replace(/\/\/[^@/]*@/, '//')}) has schema ${applied ?? 'none'}, this mailsvc needs ${LATEST_SCHEMA}: run mailsvc db migrate (or start the service once)`,
            78,
          );
        }
      }
      return await fn(await pick(new Modules(infra)));
    } finally {
      await infra.close();
    }
  };
}
