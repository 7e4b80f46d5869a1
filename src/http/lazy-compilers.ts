import { AjvCompiler } from '@fastify/ajv-compiler';
import type { BuildCompilerFromPool } from '@fastify/ajv-compiler';
import { SerializerSelector } from '@fastify/fast-json-stringify-compiler';
import type { SerializerFactory } from '@fastify/fast-json-stringify-compiler';

/**
 * Fastify's own schema compilers (Ajv for what comes in, fast-json-stringify
 * for what goes out), each route's function built on its first use instead of
 * at start-up. An idle service then holds only the validators and serializers
 * of the routes it has served: the ~200 routes' compiled functions were about
 * 10 MiB of heap at start, most of them for routes a small host rarely calls.
 *
 * Nothing else changes: the same compilers with the same options build the
 * same functions. A schema that does not compile would now fail on its
 * route's first request rather than at start, so `compileAll()` builds every
 * pending one: the HTTP contract test calls it on the whole app, so a broken
 * schema still fails CI and never reaches a client as a 500.
 */
export interface LazyCompilers {
  /** Fastify's `schemaController.compilersFactory`. */
  compilersFactory: { buildValidator: BuildCompilerFromPool; buildSerializer: SerializerFactory };
  /** Builds every function not built yet; returns how many it built. Throws the first compile error. */
  compileAll(): number;
  /** How many functions are still waiting for their first use (for tests). */
  pending(): number;
}

type Validator = ((data: unknown, ctx?: unknown) => unknown) & { errors?: unknown; schemaEnv?: unknown };
type BuildValidator = (externalSchemas: unknown, options: unknown) => (route: unknown) => Validator;
type BuildSerializer = (externalSchemas: unknown, options: unknown) => (route: unknown) => (doc: unknown) => string;

const byApp = new WeakMap<object, LazyCompilers>();

/** The lazy compilers an app was built with (the contract test forces them all). */
export function compilersOf(app: object): LazyCompilers | undefined {
  return byApp.get(app);
}

/** Remembers which app uses which compilers. */
export function attachCompilers(app: object, c: LazyCompilers): void {
  byApp.set(app, c);
}

export function lazyCompilers(): LazyCompilers {
  const waiting = new Set<() => void>();
  const validatorFactory = AjvCompiler() as unknown as BuildValidator;
  const serializerFactory = SerializerSelector() as unknown as BuildSerializer;

  function once<F>(build: () => F): { get: () => F } {
    let built: F | undefined;
    const force = (): void => {
      built ??= build();
      waiting.delete(force);
    };
    waiting.add(force);
    return {
      get: () => {
        if (built === undefined) force();
        return built as F;
      },
    };
  }

  const buildValidator: BuildValidator = (externalSchemas, options) => {
    const compile = validatorFactory(externalSchemas, options);
    return (route) => {
      const r = route as { httpPart?: string; url?: string; schema?: { properties?: Record<string, unknown> } };
      // Fastify lower-cases a header schema's names only for its own compilers: ours must have them so already.
      const upper = r.httpPart === 'headers' ? Object.keys(r.schema?.properties ?? {}).filter((k) => k !== k.toLowerCase()) : [];
      if (upper.length > 0) throw new Error(`${r.url ?? 'a route'}: name headers in lower case in its schema (${upper.join(', ')})`);
      const fn = once(() => compile(route));
      const lazy: Validator = (data, ctx) => {
        const f = fn.get();
        // Ajv sets .errors on the function it built; Fastify reads them from the one it holds.
        const result = ctx === undefined ? f(data) : f(data, ctx);
        lazy.errors = f.errors;
        return result;
      };
      // Ajv's functions carry schemaEnv, and Fastify then passes the parent object so Ajv may
      // replace a root value; ours take that second argument on to the real one.
      lazy.schemaEnv = true;
      return lazy;
    };
  };

  const buildSerializer: BuildSerializer = (externalSchemas, options) => {
    const compile = serializerFactory(externalSchemas, options);
    return (route) => {
      const fn = once(() => compile(route));
      return (doc) => fn.get()(doc);
    };
  };

  return {
    // Fastify's types describe Ajv's function; ours has its call signature, errors and schemaEnv.
    compilersFactory: { buildValidator: buildValidator as unknown as BuildCompilerFromPool, buildSerializer: buildSerializer as unknown as SerializerFactory },
    compileAll: () => {
      let n = 0;
      for (const force of [...waiting]) {
        force();
        n++;
      }
      return n;
    },
    pending: () => waiting.size,
  };
}
