import { readdirSync, readFileSync } from 'node:fs';
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
});
