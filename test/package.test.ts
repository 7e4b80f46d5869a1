import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { builtinModules } from 'node:module';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT, buildCli } from './helpers/cli.js';

/** What an installed release needs: `npm ci --omit=dev` and a start without build tools. */
type Pkg = { scripts: Record<string, string>; dependencies: Record<string, string>; devDependencies: Record<string, string>; bin: Record<string, string> };
const pkg = JSON.parse(readFileSync(join(REPO_ROOT, 'package.json'), 'utf8')) as Pkg;

function files(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? files(join(dir, e.name)) : e.name.endsWith('.js') ? [join(dir, e.name)] : []));
}

describe('a production install', () => {
  it('runs no script at install time that needs a dev tool (npm ci --omit=dev runs these)', () => {
    const installTime = ['preinstall', 'install', 'postinstall', 'prepublish', 'preprepare', 'prepare', 'postprepare'];
    expect(installTime.filter((s) => s in pkg.scripts)).toEqual([]);
    // npm start builds only in a checkout; its prestart uses node alone.
    expect(pkg.scripts.prestart).toBe('node scripts/build-if-needed.mjs');
  });

  it('the shipped command imports only production dependencies and Node built-ins', () => {
    buildCli();
    const bundleDir = join(REPO_ROOT, 'dist', 'bundle');
    expect(pkg.bin.mailsvc).toBe('dist/bundle/mailsvc.js');
    const bare = new Set<string>();
    for (const f of files(bundleDir)) {
      const text = readFileSync(f, 'utf8');
      // Static imports at the start of a line, dynamic import(), and createRequire's require("…") calls.
      for (const m of text.matchAll(/^import\s[^;]*?from\s*"([^".][^"]*)"|^import\s*"([^".][^"]*)"|\bimport\("([^".][^"]*)"\)|\brequire\w*\("([^".][^"]*)"\)/gm)) {
        bare.add(m[1] ?? m[2] ?? m[3] ?? m[4] ?? '');
      }
    }
    const packageOf = (spec: string): string => (spec.startsWith('@') ? spec.split('/').slice(0, 2).join('/') : spec.split('/')[0] ?? spec);
    const builtins = new Set(builtinModules);
    const outside = [...bare].map(packageOf).filter((p) => !p.startsWith('node:') && !builtins.has(p) && !(p in pkg.dependencies));
    expect([...new Set(outside)]).toEqual([]);
    expect(bare.size).toBeGreaterThan(3);
  });

  it('every start (--help too) evaluates only the light entry: no Kysely, database layer, infra or backup service in it', () => {
    buildCli();
    // The entry file and the chunks it imports statically are what Node evaluates before any command runs.
    const bundleDir = join(REPO_ROOT, 'dist', 'bundle');
    const entry = readFileSync(join(bundleDir, 'mailsvc.js'), 'utf8');
    const staticChunks = [...entry.matchAll(/^import\s[^;]*?from\s*"(\.\/chunks\/[^"]+)"|^import\s*"(\.\/chunks\/[^"]+)"/gm)].map((m) => m[1] ?? m[2] ?? '');
    // (rolldown's own runtime chunk has no source map: it holds only its module helpers.)
    const maps = ['mailsvc.js', ...staticChunks].map((f) => join(bundleDir, `${f}.map`)).filter((f) => existsSync(f));
    const sources = maps.flatMap((f) => (JSON.parse(readFileSync(f, 'utf8')) as { sources: string[] }).sources);
    const heavy = sources.filter((s) => /node_modules\/(kysely|undici|@sinclair|pino|fastify|ioredis|pg|mysql2)\/|\/db\/|\/infra\/|backups\/(backup\.service|restore|backup-run)/.test(s));
    expect(heavy).toEqual([]);
    // The fixture is real: the entry holds commander and the module manifests.
    expect(sources.some((s) => s.includes('node_modules/commander/'))).toBe(true);
    expect(sources.some((s) => s.endsWith('modules/backups/commands.js'))).toBe(true);
  });
});
