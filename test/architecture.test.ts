import { execFile } from 'node:child_process';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT } from './helpers/cli.js';

/** The import boundaries `npm run lint` enforces (.dependency-cruiser.cjs, docs/architecture.md). */
type Violation = { rule: { name: string }; from: string; to: string; cycle?: { name: string }[] };

function depcruise(cwd: string, outputType: 'json' | 'err-long'): Promise<{ code: number; stdout: string }> {
  const bin = join(REPO_ROOT, 'node_modules/.bin/depcruise');
  const config = join(REPO_ROOT, '.dependency-cruiser.cjs');
  return new Promise((resolve, reject) => {
    execFile(bin, ['src', '--config', config, '--output-type', outputType], { cwd, maxBuffer: 64 * 1024 * 1024 }, (err, stdout) => {
      if (err && typeof err.code !== 'number') return reject(err);
      resolve({ code: err ? Number(err.code) : 0, stdout });
    });
  });
}

/** The violations found, and the exit code and output of the run `npm run lint` makes (the `err-long` reporter). */
async function cruise(cwd: string): Promise<{ code: number; output: string; violations: Violation[] }> {
  const [json, lint] = await Promise.all([depcruise(cwd, 'json'), depcruise(cwd, 'err-long')]);
  return { code: lint.code, output: lint.stdout, violations: (JSON.parse(json.stdout) as { summary: { violations: Violation[] } }).summary.violations };
}

/** Every rule of the configuration, with its advice. */
const rules = (createRequire(import.meta.url)(join(REPO_ROOT, '.dependency-cruiser.cjs')) as { forbidden: { name: string; comment: string }[] }).forbidden;

describe('import boundaries', () => {
  it('the source tree keeps every boundary', async () => {
    const r = await cruise(REPO_ROOT);
    expect(r.violations.map((v) => `${v.rule.name}: ${v.from} -> ${v.to}`)).toEqual([]);
    expect(r.code).toBe(0);
    // dependency-cruiser parses all ~540 modules: about 10 s on an idle 2-core machine, past 30 s when a
    // second test run shares it (the clean-clone pair timed out here). CPU work, not a wait: a longer limit.
  }, 180_000);

  it('each rule fires on a tree that breaks it, and the run fails', async () => {
    const r = await cruise(join(REPO_ROOT, 'test/fixtures/boundaries'));
    expect(r.code).not.toBe(0);
    const found = new Set(r.violations.map((v) => `${v.rule.name}: ${v.from} -> ${v.to}`));
    expect([...found].sort()).toEqual(
      [
        'config-adapters-db-stay-low: src/config/uses-infra.ts -> src/infra/infra.ts',
        'http-cli-not-into-each-other: src/http/uses-cli.ts -> src/cli/program.ts',
        'lower-layers-never-import-modules: src/adapters/imports-module.ts -> src/modules/a/index.ts',
        'modules-meet-through-index: src/modules/b/uses-internal.ts -> src/modules/a/internal.ts',
        'modules-never-import-http-cli-app: src/modules/b/index.ts -> src/http/app.ts',
        'modules-never-import-http-cli-app: src/modules/e/index.ts -> src/app/module-list.ts',
        'no-cycles-in-composition-root: src/app/wiring-a.ts -> src/app/wiring-b.ts',
        'helper-stays-small: src/helper/uses-db.ts -> src/db/database.ts',
        'doc-tables-stay-a-tool: src/cli/uses-doc-tables.ts -> src/doc-tables/render.ts',
        'no-cycles: src/modules/c/index.ts -> src/modules/d/index.ts',
        'outside-reaches-modules-through-their-doors: src/http/reaches-inside.ts -> src/modules/a/internal.ts',
        'shared-imports-only-shared: src/shared/reaches-up.ts -> src/config/setting.ts',
      ].sort(),
    );
    // Every rule is broken once, and the run prints each one's advice (its comment), not only its name.
    expect([...new Set(r.violations.map((v) => v.rule.name))].sort()).toEqual(rules.map((rule) => rule.name).sort());
    const flat = r.output.replace(/\s+/g, ' ');
    for (const rule of rules.filter((x) => r.violations.some((v) => v.rule.name === x.name))) expect(flat, rule.name).toContain(rule.comment.slice(0, 60));
  });

  it('a module importing the composition root is one error that says what to do, not a cycle error for each file of the loop it closes', async () => {
    const r = await cruise(join(REPO_ROOT, 'test/fixtures/boundaries'));
    const wrong = r.violations.filter((v) => [v.from, v.to, ...(v.cycle ?? []).map((c) => c.name)].some((f) => f.startsWith('src/modules/e/') || f === 'src/app/module-list.ts'));
    expect(wrong.map((v) => `${v.rule.name}: ${v.from} -> ${v.to}`)).toEqual(['modules-never-import-http-cli-app: src/modules/e/index.ts -> src/app/module-list.ts']);
    expect(r.output.replace(/\s+/g, ' ')).toContain('Another module: ctx.get(...) in your module.ts build');
  });
});
