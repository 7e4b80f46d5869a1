import type { Infra } from '../infra/index.js';
import type { AnyModuleManifest, DeletionListener, EventName, EventSource, ModuleContext, ModuleEvents, ModuleName, ModuleOptions, ModuleRegistry } from '../modules/module-types.js';
import type { HttpModule } from '../modules/route-types.js';

/** A module that serves HTTP, with its manifest (its name and docs page). */
export type HttpEntry = { manifest: AnyModuleManifest; module: HttpModule };

/**
 * Every module of the list, each loaded and built on first use from the
 * shared infrastructure and the modules it asks for (its manifest's `build`).
 * The HTTP service asks for all that serve HTTP; a CLI command for one, and
 * only that one and what it needs are even loaded (`import()`), so `domains
 * list` never loads argon2, the SMS client or Fastify.
 */
export class Modules implements ModuleContext {
  private readonly built = new Map<string, Promise<unknown>>();
  private readonly byName: ReadonlyMap<string, AnyModuleManifest>;

  constructor(
    readonly infra: Infra,
    readonly options: ModuleOptions,
    /** The module list (loadModuleList of module-list.ts), or another for a test. */
    readonly list: readonly AnyModuleManifest[],
  ) {
    const byName = new Map<string, AnyModuleManifest>();
    for (const m of list) {
      if (byName.has(m.name)) throw new Error(`two modules are named ${m.name}`);
      byName.set(m.name, m);
    }
    this.byName = byName;
  }

  get<K extends ModuleName>(name: K): Promise<ModuleRegistry[K]> {
    let p = this.built.get(name) as Promise<ModuleRegistry[K]> | undefined;
    if (!p) {
      const manifest = this.byName.get(name);
      if (!manifest) return Promise.reject(new Error(`no module ${name} in the module list`));
      p = (manifest.build as (ctx: ModuleContext) => Promise<ModuleRegistry[K]>)(this);
      this.built.set(name, p);
    }
    return p;
  }

  event<E extends EventName>(name: E): EventSource<ModuleEvents[E]> {
    type Make = (ctx: ModuleContext) => Promise<DeletionListener<ModuleEvents[E]>>;
    return {
      listeners: () => Promise.all(this.list.flatMap((m) => (m.listens?.[name] ? [(m.listens[name] as Make)(this)] : []))),
    };
  }

  /** Every module that serves HTTP with these settings, in the order of the list (their routes are registered in it). */
  async http(): Promise<HttpEntry[]> {
    const serving = this.list.filter((m) => (typeof m.http === 'function' ? m.http(this.infra.settings) : m.http === true));
    const built = await Promise.all(serving.map((m) => this.get(m.name)));
    return serving.map((manifest, i) => ({ manifest, module: built[i] as HttpModule }));
  }

  /** What the running service sets up at start, after the migrations (each module's `prepare`). */
  async prepare(): Promise<void> {
    for (const m of this.list) if (m.prepare) await this.call(m, 'prepare', true);
  }

  /** Stops what runs in the background (each built module's `close`), then closes the infrastructure. */
  async close(): Promise<void> {
    for (const m of [...this.list].reverse()) if (m.close) await this.call(m, 'close', false);
    await this.infra.close();
  }

  /** Another process changed what the service caches (tokens, the MFA record, the limits): each built module's `reload`. */
  async dropCaches(): Promise<void> {
    for (const m of this.list) if (m.reload) await this.call(m, 'reload', false);
  }

  /** Runs a manifest's hook on its module: built first when `build`, else only if it was built already. */
  private async call(m: AnyModuleManifest, hook: 'prepare' | 'close' | 'reload', build: boolean): Promise<void> {
    if (!build && !this.built.has(m.name)) return;
    const run = m[hook] as ((module: unknown) => Promise<unknown>) | undefined;
    await run?.call(m, await this.get(m.name));
  }
}
