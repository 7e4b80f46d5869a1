import type { Command } from 'commander';
import type { Settings } from '../config/settings.js';
import type { Db } from '../db/database.js';
import type { MigrationSource } from '../db/migrate.js';
import type { Infra } from '../infra/index.js';
import type { Run } from './command-types.js';
import type { HttpModule } from './route-types.js';

/*
 * What a module declares about itself, in its own folder (`module.ts`): how it
 * is built, its migrations, routes, commands, the events it listens to and
 * the records it writes to the audit log. The composition root picks the
 * modules up from one list (src/app/module-list.ts) and builds each on first
 * use. docs/architecture.md, "Adding a module", walks through one.
 */

/**
 * Every module by name, as `build` returns it. Each module adds its own entry
 * in its module.ts, so `ctx.get('dns')` is typed without a list kept here:
 *
 *     declare module '../module-types.js' {
 *       interface ModuleRegistry { notes: NotesModule }
 *     }
 */
// eslint-disable-next-line @typescript-eslint/no-empty-object-type
export interface ModuleRegistry {}
export type ModuleName = keyof ModuleRegistry;

/**
 * The events modules emit, by name, with what each carries. The owner of a
 * thing declares its events (`'domain.deleting': DomainDeleting`) and emits
 * them; any module may listen (`listens` below), so the owner never changes
 * for a new listener.
 */
// eslint-disable-next-line @typescript-eslint/no-empty-object-type
export interface ModuleEvents {}
export type EventName = keyof ModuleEvents;

/** Doubles a test may hand the composition root (a fake SMS sender, a recorded session kicker): each module adds its own. */
// eslint-disable-next-line @typescript-eslint/no-empty-object-type
export interface ModuleOptions {}

/**
 * A module's part in deleting something another module owns (a domain, an
 * account): its own rows that hang on it go in the same transaction.
 */
export type DeletionListener<E> = {
  /** Before the owner's transaction, for work outside the database; throwing refuses the delete (nothing is deleted). */
  before?(event: E): Promise<void>;
  /** Inside the owner's transaction `tx`, before the owner's row goes; throwing rolls the whole delete back. */
  within(tx: Db, event: E): Promise<void>;
  /** The delete failed after `before` ran: put back what it changed. A thrown error's message is added to the delete's error. */
  undo?(event: E): Promise<void>;
};

/** What an owner holds to emit one of its events: the listeners, built when first asked for. */
export type EventSource<E> = { listeners(): Promise<DeletionListener<E>[]> };

/** What a module's `build` (and its listeners) may reach: the shared infrastructure and the other modules. */
export type ModuleContext = {
  readonly infra: Infra;
  readonly options: ModuleOptions;
  /** Another module, built on first use, once per process. */
  get<K extends ModuleName>(name: K): Promise<ModuleRegistry[K]>;
  /** One of this module's events, to hand to its service, which emits it. */
  event<E extends EventName>(name: E): EventSource<ModuleEvents[E]>;
};

/** How a command reaches what it needs. */
export type RunOptions = {
  /** Check that the database is migrated before running (default: yes, for every command that uses it). */
  schema?: boolean;
  /** The module keeps state in Redis when MAILSVC_REDIS_URL is set (limit maps, tokens): connect it first. */
  redis?: boolean;
  /** false: the command never opens the database, so Kysely and the drivers are not even loaded. Implies schema: false. */
  database?: boolean;
};

/** What a module's commands are given: ways to reach the module when the command runs (never at `--help`). */
export type CommandKit<M> = {
  /** This module, built when the command runs, closed afterwards. */
  run(opts?: RunOptions): Run<M>;
  /** Something else built when the command runs: a part of this module, another build of it, several modules. */
  runWith<T>(pick: (ctx: ModuleContext) => Promise<T>, opts?: RunOptions): Run<T>;
  /** Like `runWith`, for a command that also works before the database is made: `fn` gets null then. */
  runIfMigrated<T>(pick: (ctx: ModuleContext) => Promise<T>, opts?: RunOptions): Run<T | null>;
};

/** A record a module writes to the audit log itself (besides its routes' and commands', which are recorded for it). */
export type AuditedAction = { action: string; when: string };

export type { MigrationSource };

type Listens = { readonly [E in EventName]?: (ctx: ModuleContext) => Promise<DeletionListener<ModuleEvents[E]>> };

export type ModuleManifest<K extends ModuleName> = {
  readonly name: K;
  /** The page in docs/ that describes it: the generated endpoint and command tables link it. */
  readonly doc?: string;
  /** Its migrations: the migrator finds them here, beside every other module's, ordered by name. */
  readonly migrations?: MigrationSource;
  /** Builds the module (import its index.ts here, so that nothing of it loads before it is used). */
  build(ctx: ModuleContext): Promise<ModuleRegistry[K]>;
  /** Serves HTTP (what `build` returns has `routes`); a function: only when the settings say so. */
  readonly http?: ModuleRegistry[K] extends HttpModule ? true | ((settings: Settings) => boolean) : never;
  /** Adds its commands to the program: every command is audited unless it is marked `readOnly` or `notAudited` (command-types.ts). */
  commands?(program: Command, cli: CommandKit<ModuleRegistry[K]>): void;
  /** The other modules' events it listens to. */
  readonly listens?: Listens;
  /** What it records in the audit log itself, for docs/audit.md. */
  readonly audits?: readonly AuditedAction[];
  /** At the service's start, after the migrations. */
  prepare?(module: ModuleRegistry[K]): Promise<unknown>;
  /** A host command changed what the running service caches: read it again. */
  reload?(module: ModuleRegistry[K]): Promise<unknown>;
  /** The process ends: stop what runs in the background. */
  close?(module: ModuleRegistry[K]): Promise<unknown>;
};

/** Any one module's manifest. */
export type AnyModuleManifest = { [K in ModuleName]: ModuleManifest<K> }[ModuleName];

/** Declares a module (the identity, there for the types): `export default defineModule({ name: 'notes', … })`. */
export function defineModule<K extends ModuleName>(manifest: ModuleManifest<K>): ModuleManifest<K> {
  return manifest;
}
