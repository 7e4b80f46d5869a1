import { createRequire } from 'node:module';
import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import type PinoType from 'pino';
import type { Settings } from '../config/settings.js';
import { dialectOf } from '../db/dialect.js';
import type { DialectName } from '../db/dialect.js';
import type { Db } from '../db/database.js';
import type { Schema } from '../db/migrate.js';
import type { OutboundPolicy } from '../adapters/outbound/address-policy.js';
import { createRedis } from '../adapters/redis/redis-client.js';
import type { HelperClient } from '../adapters/helper-client.js';
import { AuthLog } from '../shared/auth-log.js';
import { Instruments } from './instruments.js';
import { ChangeSignal } from '../shared/change-signal.js';
import { systemClock } from '../shared/clock.js';
import type { Clock } from '../shared/clock.js';
import { AppError } from '../shared/errors.js';
import type { SecretBox } from '../shared/secret-box.js';
import { loadSecretBox } from '../shared/secret-key-file.js';

/**
 * The shared infrastructure every module is built from. Each part is made on
 * first use, so a CLI command pays only for what it touches: `mailsvc --help`
 * opens nothing, `domains list` opens the database and nothing else.
 */
export type Infra = {
  readonly settings: Settings;
  readonly log: Logger;
  readonly clock: Clock;
  readonly dialect: DialectName;
  /** The database, opened on first use. Never migrated here: `serve` and `db migrate` do that. */
  readonly db: Db;
  /** The schema this version needs (every module's migrations): its latest name, its migrator. */
  readonly schema: Schema;
  /** The MAILSVC_REDIS_URL client (made on first use, connects on its first command); undefined without it. */
  readonly redis: Redis | undefined;
  /** Seals and opens stored secrets; reads (or on first start writes) the key file on first use. */
  readonly box: SecretBox;
  readonly authLog: AuthLog;
  /** The process's metrics (GET /metrics); observations are dropped until the service enables them. */
  readonly instruments: Instruments;
  readonly outbound: OutboundPolicy;
  /** Tells a running service that a host command changed what it caches. */
  readonly changes: ChangeSignal;
  /** The privileged helper (MAILSVC_HELPER): root work goes through it, never through sudo. */
  readonly helper: HelperClient;
  /**
   * Root work for a process that is root itself (the backup units, `mailsvc
   * backup`/`restore` as root): the helper's actions in this process, with the
   * helper's own settings; for any other process the same as `helper`.
   */
  readonly rootHelper: HelperClient;
  /** Connects Redis now, for `serve`: an unreachable Redis stops the start with one clear line. */
  connectRedis(): Promise<void>;
  close(): Promise<void>;
};

export type InfraOptions = {
  clock?: Clock;
  log?: Logger | (() => Logger);
  /** The service on its first start makes the key file; a host command never does. */
  createKeyFile?: boolean;
  /**
   * Opens the database (`createDb` of db/database.js). Passed in rather than
   * imported so that a command that never opens the database (queue list)
   * does not load Kysely and its drivers; `infra.db` without it is a
   * programming error, reported as such.
   */
  openDb?: (url: string) => Db;
  /** The schema of the module list (src/app/schema.ts), given with `openDb`. */
  schema?: Schema;
};

// Loaded on first use: a CLI command that logs nothing and uses no Redis loads neither.
const require = createRequire(import.meta.url);
const loadPino = (): typeof PinoType => require('pino') as typeof PinoType;

export function serviceLogger(settings: Settings): Logger {
  return loadPino()({ level: settings.logLevel, redact: ['req.headers.authorization', 'req.headers.cookie', 'req.headers["x-mailsvc-reauth"]'] });
}

/** A logger to stderr, for CLI commands: stdout holds only their result. */
export function stderrLogger(level: string): Logger {
  return loadPino()({ level }, process.stderr);
}

function memo<T>(make: () => T): () => T {
  let made = false;
  let value: T;
  return () => {
    if (!made) {
      value = make();
      made = true;
    }
    return value;
  };
}

export function createInfra(settings: Settings, opts: InfraOptions = {}): Infra {
  const given = opts.log;
  const log = memo((): Logger => (given === undefined ? serviceLogger(settings) : typeof given === 'function' ? given() : given));
  let dbOpen: Db | undefined;
  let redisOpen: Redis | undefined;
  let changesOpen: ChangeSignal | undefined;
  const openDb = opts.openDb;
  const db = memo(() => {
    if (!openDb) throw new Error('this command was built without the database (createInfra without openDb)');
    return (dbOpen = openDb(settings.databaseUrl));
  });
  const redis = memo((): Redis | undefined => {
    if (!settings.redisUrl) return undefined;
    // Fail fast while Redis is away (no offline queue, short timeouts): requests get a 503, never a hang.
    return (redisOpen = createRedis(settings.redisUrl, log()));
  });
  const box = memo(() => loadSecretBox(settings, { create: opts.createKeyFile === true }));
  const instruments = new Instruments();
  const authLog = memo(() => new AuthLog(settings.authLog, () => instruments.authFailure()));
  const changes = memo(() => (changesOpen = new ChangeSignal(settings.dataDir)));
  // The helper's client code (and, in direct mode, its actions) loads on the first call.
  let helperClient: Promise<HelperClient> | undefined;
  const helper: HelperClient = {
    run: async (action, args) => {
      helperClient ??= import('../helper/index.js').then((h) => h.createHelperClient(settings.helper, log()));
      return (await helperClient).run(action, args);
    },
  };
  let rootClient: Promise<HelperClient> | undefined;
  const rootHelper: HelperClient =
    process.getuid?.() === 0 && settings.helper.endpoint.mode !== 'direct'
      ? {
          run: async (action, args) => {
            rootClient ??= import('../helper/index.js').then((h) => h.createHelperClient({ ...settings.helper, endpoint: { mode: 'direct' } }, log()));
            return (await rootClient).run(action, args);
          },
        }
      : helper;
  return {
    settings,
    get log() {
      return log();
    },
    clock: opts.clock ?? systemClock,
    dialect: dialectOf(settings.databaseUrl),
    get db() {
      return db();
    },
    get schema() {
      if (!opts.schema) throw new Error('this command was built without the database (createInfra without schema)');
      return opts.schema;
    },
    get redis() {
      return redis();
    },
    get box() {
      return box();
    },
    get authLog() {
      return authLog();
    },
    instruments,
    outbound: { allowHosts: settings.outboundAllowHosts },
    get changes() {
      return changes();
    },
    helper,
    rootHelper,
    async connectRedis() {
      const client = redis();
      if (!client || client.status === 'ready') return;
      await client.connect().catch((err: unknown) => {
        throw new AppError('unavailable', `cannot reach Redis at MAILSVC_REDIS_URL (${err instanceof Error ? err.message : String(err)}); check that it runs`);
      });
    },
    async close() {
      changesOpen?.close();
      if (redisOpen) await redisOpen.quit().catch(() => redisOpen?.disconnect());
      if (dbOpen) await dbOpen.destroy();
    },
  };
}
