import { execFile } from 'node:child_process';
import { cpSync, existsSync, mkdtempSync, readFileSync, readdirSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join, relative } from 'node:path';
import { stripVTControlCharacters } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REPO_ROOT } from './helpers/cli.js';

/**
 * Adding a module touches its folder and one line of src/app/module-list.ts:
 * the example module of docs/architecture.md (test/example-module/notes, with
 * a migration, routes, commands, a deletion listener and its own tests) is
 * added to a copy of this tree, and the copy's lint, type check, the module's
 * tests (its routes on every dialect, its CLI) and the docs generator run
 * there. The copy shares node_modules through a symlink; its lint and type
 * check are the whole tree's (`npm run lint`, `npm run typecheck`), its tests
 * only the new module's (the rest of the tree is this suite's).
 */
const SKIP = new Set(['node_modules', 'dist', 'var', '.git', 'coverage', 'test-results']);
const LIST = 'src/app/module-list.ts';
const LINE = "  () => import('../modules/notes/module.js'),";

type Run = { code: number; out: string };
function run(cwd: string, cmd: string, args: string[]): Promise<Run> {
  return new Promise((resolve, reject) => {
    execFile(cmd, args, { cwd, env: process.env, maxBuffer: 64 * 1024 * 1024, timeout: 15 * 60_000 }, (err, stdout, stderr) => {
      if (err && typeof err.code !== 'number') return reject(err);
      // Without colours: the output is read here.
      resolve({ code: err ? Number(err.code) : 0, out: stripVTControlCharacters(`${stdout}${stderr}`) });
    });
  });
}

/** Every file under `root` (the copy's skipped directories left out), by path relative to it. */
function files(root: string, dir = root): Map<string, Buffer> {
  const out = new Map<string, Buffer>();
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    if (SKIP.has(e.name)) continue;
    const p = join(dir, e.name);
    if (e.isDirectory()) for (const [k, v] of files(root, p)) out.set(k, v);
    else if (e.isFile()) out.set(relative(root, p), readFileSync(p));
  }
  return out;
}

describe('adding a module: its folder and one line of the module list', () => {
  let copy: string;
  beforeAll(() => {
    copy = mkdtempSync(join(tmpdir(), 'mailsvc-add-module-'));
    cpSync(REPO_ROOT, copy, { recursive: true, filter: (src) => !SKIP.has(basename(src)) });
    symlinkSync(realpathSync(join(REPO_ROOT, 'node_modules')), join(copy, 'node_modules'));
    // The module: its folder, as test/example-module/notes holds it ...
    cpSync(join(REPO_ROOT, 'test/example-module/notes'), join(copy, 'src/modules/notes'), { recursive: true });
    // ... and its line at the end of the module list.
    const list = readFileSync(join(copy, LIST), 'utf8');
    const end = list.indexOf('\n];\n');
    writeFileSync(join(copy, LIST), `${list.slice(0, end)}\n${LINE}${list.slice(end)}`);
  });
  afterAll(() => {
    if (copy) rmSync(copy, { recursive: true, force: true });
  });

  it('the copy differs from this tree by the module folder and one added line, nothing else', () => {
    const before = files(REPO_ROOT);
    const after = files(copy);
    const added = [...after.keys()].filter((f) => !before.has(f));
    const changed = [...after.keys()].filter((f) => before.has(f) && !before.get(f)?.equals(after.get(f) as Buffer));
    expect(added.every((f) => f.startsWith('src/modules/notes/'))).toBe(true);
    expect(added).toContain('src/modules/notes/migrations/0030_domain_notes.ts');
    expect(changed).toEqual([LIST]);
    expect([...before.keys()].filter((f) => !after.has(f))).toEqual([]);
    const was = (before.get(LIST) as Buffer).toString('utf8').split('\n');
    const now = (after.get(LIST) as Buffer).toString('utf8').split('\n');
    expect(now.length).toBe(was.length + 1);
    expect(now.filter((l) => l !== LINE)).toEqual(was);
  });

  it('npm run lint passes there (the module keeps every import boundary)', async () => {
    const r = await run(copy, 'npm', ['run', 'lint']);
    expect(r.code, r.out).toBe(0);
    expect(r.out).toMatch(/no dependency violations found/);
  }, 15 * 60_000);

  it('npm run typecheck passes there (its tables join Database, its name the module registry, its event listener types)', async () => {
    const r = await run(copy, 'npm', ['run', 'typecheck']);
    expect(r.code, r.out).toBe(0);
  }, 15 * 60_000);

  it("the module's tests pass there: its migration found, its routes, audit records and deletion on every dialect, its CLI", async () => {
    writeFileSync(
      join(copy, 'vitest.notes.config.ts'),
      "import { defineConfig } from 'vitest/config';\nexport default defineConfig({ test: { include: ['src/modules/notes/**/*.test.ts'], pool: 'forks', testTimeout: 120_000, hookTimeout: 120_000 } });\n",
    );
    const r = await run(copy, join(copy, 'node_modules/.bin/vitest'), ['run', '--config', 'vitest.notes.config.ts']);
    // A dialect whose server is not here is skipped with a notice: say so here too.
    for (const line of r.out.split('\n').filter((l) => l.includes('[skip]'))) console.warn(line.trim());
    expect(r.code, r.out).toBe(0);
    expect(r.out).toMatch(/Tests +\d+ passed/);
    expect(r.out).not.toMatch(/failed/);
  }, 15 * 60_000);

  it('npm run docs:generate finds its routes and commands: the README tables and docs/audit.md gain them', async () => {
    const check = await run(copy, 'node', ['scripts/docs-generate.mjs', '--check']);
    expect(check.code, check.out).toBe(1);
    expect(check.out).toMatch(/stale: README\.md, docs\/audit\.md/);
    expect((await run(copy, 'npm', ['run', 'docs:generate'])).code).toBe(0);
    const readme = readFileSync(join(copy, 'README.md'), 'utf8');
    expect(readme).toContain('| POST | `/domains/{domain}/notes` | Add a note to a domain | admin, API key scope `accounts` | [docs/architecture.md](docs/architecture.md) |');
    expect(readme).toContain('| `mailsvc notes add <domain> <text> [--json]` | add a note to a domain |');
    const audit = readFileSync(join(copy, 'docs/audit.md'), 'utf8');
    expect(audit).toContain('- notes: `POST /domains/:domain/notes`, `DELETE /domains/:domain/notes/:id`');
    expect(audit).toContain('- notes: `notes add`, `notes delete`');
    expect(existsSync(join(copy, 'src/modules/notes/module.ts'))).toBe(true);
  }, 5 * 60_000);
});
