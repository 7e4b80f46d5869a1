import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT } from './helpers/cli.js';

/** The import boundaries `npm run lint` enforces (.dependency-cruiser.cjs, docs/architecture.md). */
type Violation = { rule: { name: string }; from: string; to: string; cycle?: { name: string }[] };

function depcruise(cwd: string, outputType: 'json' | 'err'): Promise<{ code: number; stdout: string }> {
  const bin = join(REPO_ROOT, 'node_modules/.bin/depcruise');
  const config = join(REPO_ROOT, '.dependency-cruiser.cjs');
  return new Promise((resolve, reject) => {
    execFile(bin, ['src', '--config', config, '--output-type', outputType], { cwd, maxBuffer: 64 * 1024 * 1024 }, (err, stdout) => {
      if (err && typeof err.code !== 'number') return reject(err);
      resolve({ code: err ? Number(err.code) : 0, stdout });
    });
  });
}

/** The violations found, and the exit code of the run `npm run lint` makes (the `err` reporter). */
async function cruise(cwd: string): Promise<{ code: number; violations: Violation[] }> {
  const [json, lint] = await Promise.all([depcruise(cwd, 'json'), depcruise(cwd, 'err')]);
  return { code: lint.code, violations: (JSON.parse(json.stdout) as { summary: { violations: Violation[] } }).summary.violations };
}

describe('import boundaries', () => {
  it('the source tree keeps every boundary', async () => {
    const r = await cruise(REPO_ROOT);
    expect(r.violations.map((v) => `${v.rule.name}: ${v.from} -> ${v.to}`)).toEqual([]);
    expect(r.code).toBe(0);
  });

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
        'no-cycles: src/modules/c/index.ts -> src/modules/d/index.ts',
        'outside-reaches-modules-through-their-doors: src/http/reaches-inside.ts -> src/modules/a/internal.ts',
        'shared-imports-only-shared: src/shared/reaches-up.ts -> src/config/setting.ts',
      ].sort(),
    );
  });
});
