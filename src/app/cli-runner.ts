import { existsSync } from 'node:fs';
import type { Settings } from '../config/settings.js';
import type { EarlyStart, Run } from '../modules/command-types.js';
import type { ModuleContext, RunOptions } from '../modules/module-types.js';
import { CliError } from '../shared/terminal/output.js';
import type { Modules } from './modules.js';
import { loadModuleList } from './module-list.js';

/**
 * A module's command at work: the settings, the infrastructure and the one
 * module it asked for are loaded and built when the command runs (never for
 * `--help`), and closed afterwards. Logs go to stderr so that stdout holds
 * only the result (--json stays parseable), below warn only when
 * MAILSVC_LOG_LEVEL asks for it.
 */
/**
 * A host command never creates a database: an SQLite file that is not there is
 * a wrong data directory far more often than a new host.
 */
function assertDatabaseExists(settings: Settings): void {
  const { databaseUrl, dataDir, configFile, layout } = settings;
  if (!databaseUrl.startsWith('sqlite://')) return;
  const path = databaseUrl.slice('sqlite://'.length);
  if (path === '' || existsSync(path)) return;
  throw new CliError(
    `no database at ${path} (data directory ${dataDir}, settings file ${configFile}, ${layout} defaults): ` +
      'run mailsvc db migrate to create it there, or set MAILSVC_DATA_DIR (or MAILSVC_DATABASE_URL) to where your data is',
    78,
  );
}

type Opened<E> = { settings: Settings; modules: Modules; early: E | undefined; close(): Promise<void> };

/**
 * The settings, the infrastructure and the module list. With `early` (a
 * command's early start) the settings are read first and `early` called with
 * them before the rest loads; what it started is closed with the rest, or at
 * once when opening fails.
 */
async function open<E extends { close(): void }>(database: boolean, early: EarlyStart<E> | undefined): Promise<Opened<E>> {
  const settingsRead = import('../config/settings.js').then(({ loadSettings }) => loadSettings());
  const started = early ? settingsRead.then(early) : undefined;
  // With an early start the rest is asked for once it has started: asked for at once, their chunks
  // held up the settings' own and postqueue started later (docs/performance.md, "An early start").
  const loading = (started ?? Promise.resolve())
    .catch(() => undefined)
    .then(() =>
      Promise.all([
        import('../infra/index.js'),
        import('./modules.js'),
        loadModuleList(),
        database ? import('../db/database.js') : undefined,
        database ? import('./schema.js').then((s) => s.loadSchema()) : undefined,
      ]),
    );
  let startedEarly: E | undefined;
  try {
    const [settings, [{ createInfra, stderrLogger }, { Modules }, list, db, schema]] = await Promise.all([
      settingsRead,
      loading,
      started?.then((e) => {
        startedEarly = e;
      }),
    ]);
    const level = process.env.MAILSVC_LOG_LEVEL ? settings.logLevel : 'warn';
    const infra = createInfra(settings, { log: () => stderrLogger(level), ...(db && schema ? { openDb: db.createDb, schema } : {}) });
    const close = async (): Promise<void> => {
      startedEarly?.close();
      await infra.close();
    };
    return { settings, modules: new Modules(infra, {}, list), early: startedEarly, close };
  } catch (err) {
    (startedEarly ?? (await started?.catch(() => undefined)))?.close();
    throw err;
  }
}

/** The newest migration applied to the configured database, or null when it has none (or no SQLite file). */
async function applied(settings: Settings, modules: Modules): Promise<{ applied: string | null; latest: string }> {
  const { appliedSchema } = await import('../db/migrate.js');
  const latest = modules.infra.schema.latest;
  if (settings.databaseUrl.startsWith('sqlite://') && !existsSync(settings.databaseUrl.slice('sqlite://'.length))) return { applied: null, latest };
  return { applied: await appliedSchema(modules.infra.db), latest };
}

export function runModule<M>(pick: (modules: ModuleContext) => Promise<M>, opts: RunOptions = {}): Run<M> {
  return async (fn, early) => {
    const { settings, modules, early: started, close } = await open(opts.database !== false, early);
    try {
      if (opts.schema !== false && opts.database !== false) {
        assertDatabaseExists(settings);
        const schema = await applied(settings, modules);
        if (schema.applied !== schema.latest) {
          throw new CliError(
            `the database (${settings.databaseUrl.replace(/\/\/[^@/]*@/, '//')}) has schema ${schema.applied ?? 'none'}, this mailsvc needs ${schema.latest}: run mailsvc db migrate (or start the service once)`,
            78,
          );
        }
      }
      if (opts.redis === true) await modules.infra.connectRedis();
      return await fn(await pick(modules), started);
    } finally {
      await close();
    }
  };
}

/**
 * Like `runModule`, for a command that also works before the database is
 * made (`admin set-password` on a new host): `fn` gets null when the
 * database is missing or not migrated to this version.
 */
export function runModuleIfMigrated<M>(pick: (modules: ModuleContext) => Promise<M>, opts: RunOptions = {}): Run<M | null> {
  return async (fn, early) => {
    const { settings, modules, early: started, close } = await open(true, early);
    try {
      const schema = await applied(settings, modules);
      if (schema.applied !== schema.latest) return await fn(null, started);
      if (opts.redis === true) await modules.infra.connectRedis();
      return await fn(await pick(modules), started);
    } finally {
      await close();
    }
  };
}
