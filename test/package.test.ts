import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { builtinModules } from 'node:module';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT, buildCli, runCli } from './helpers/cli.js';
import { loadModuleList } from '../src/app/module-list.js';
import { commandIndexOf, commandOf, parseCommandIndex } from '../src/cli/command-index.js';
import type { CommandIndex } from '../src/cli/command-index.js';
import { buildProgram } from '../src/cli/program.js';
import type { AnyModuleManifest } from '../src/modules/module-types.js';
import type { Command } from 'commander';

/** What an installed release needs: `npm ci --omit=dev` and a start without build tools. */
type Pkg = { scripts: Record<string, string>; dependencies: Record<string, string>; devDependencies: Record<string, string>; bin: Record<string, string> };
const pkg = JSON.parse(readFileSync(join(REPO_ROOT, 'package.json'), 'utf8')) as Pkg;

function files(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? files(join(dir, e.name)) : e.name.endsWith('.js') ? [join(dir, e.name)] : []));
}

describe('a production install', () => {
  it('runs no script at install time that needs a dev tool (npm ci --omit=dev runs these)', () => {
    const installTime = ['preinstall', 'install', 'postinstall', 'prepublish', 'preprepare', 'prepare', 'postprepare'];
    // The one: the SO_PEERCRED addon, built by the node-gyp npm itself ships (no dev dependency).
    expect(Object.fromEntries(installTime.filter((s) => s in pkg.scripts).map((s) => [s, pkg.scripts[s]]))).toEqual({ install: 'node-gyp rebuild -C native/peercred' });
    expect(Object.keys(pkg.devDependencies)).not.toContain('node-gyp');
    // npm start builds only in a checkout; its prestart uses node alone.
    expect(pkg.scripts.prestart).toBe('node scripts/build-if-needed.mjs');
  });

  it('ships the compiled SO_PEERCRED addon the helper loads (npm pack lists it; the release copies what npm pack lists)', () => {
    const r = spawnSync('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], { cwd: REPO_ROOT, encoding: 'utf8', timeout: 120_000 });
    expect(r.status, r.stderr).toBe(0);
    const packed = (JSON.parse(r.stdout) as { files: { path: string }[] }[])[0]?.files.map((f) => f.path) ?? [];
    expect(packed).toEqual(expect.arrayContaining(['native/peercred/build/Release/peercred.node', 'native/peercred/peercred.c', 'native/peercred/binding.gyp']));
    expect(existsSync(join(REPO_ROOT, 'native/peercred/build/Release/peercred.node'))).toBe(true);
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

  it('every start (--help too) evaluates only the light entry: no Kysely, database layer, infra, backup service, module commands or helper actions in it', () => {
    buildCli();
    // The entry file and the chunks it imports statically are what Node evaluates before any command runs.
    const bundleDir = join(REPO_ROOT, 'dist', 'bundle');
    const entry = readFileSync(join(bundleDir, 'mailsvc.js'), 'utf8');
    const staticChunks = [...entry.matchAll(/^import\s[^;]*?from\s*"(\.\/chunks\/[^"]+)"|^import\s*"(\.\/chunks\/[^"]+)"/gm)].map((m) => m[1] ?? m[2] ?? '');
    // (rolldown's own runtime chunk has no source map: it holds only its module helpers.)
    const maps = ['mailsvc.js', ...staticChunks].map((f) => join(bundleDir, `${f}.map`)).filter((f) => existsSync(f));
    const sources = maps.flatMap((f) => (JSON.parse(readFileSync(f, 'utf8')) as { sources: string[] }).sources);
    const heavy = sources.filter((s) =>
      /node_modules\/(kysely|undici|@sinclair|pino|fastify|ioredis|pg|mysql2|ipaddr\.js)\/|\/db\/|\/infra\/|backups\/(backup\.service|restore|backup-run)|modules\/[^/]+\/(commands|module)\.js|helper\/actions\.js/.test(s),
    );
    expect(heavy).toEqual([]);
    // Nor the built-ins only some commands need (the secret box's crypto, prompts): each costs every start its load.
    const builtins = [...entry.matchAll(/^import\s[^;]*?from\s*"(node:[^"]+)"/gm)].map((m) => m[1]);
    expect(builtins.filter((b) => /^node:(crypto|readline)/.test(b ?? ''))).toEqual([]);
    // The fixture is real: the entry holds commander and the program; the module commands are in a chunk of their own.
    expect(sources.some((s) => s.includes('node_modules/commander/'))).toBe(true);
    expect(sources.some((s) => s.endsWith('cli/program.js'))).toBe(true);
    const chunkSources = files(join(bundleDir, 'chunks'))
      .filter((f) => existsSync(`${f}.map`))
      .flatMap((f) => (JSON.parse(readFileSync(`${f}.map`, 'utf8')) as { sources: string[] }).sources);
    expect(chunkSources.some((s) => s.endsWith('modules/backups/commands.js'))).toBe(true);
  });
});

/** The full program, and which module added each command. */
async function fullProgram(): Promise<{ program: Command; owners: Map<Command, AnyModuleManifest> }> {
  const owners = new Map<Command, AnyModuleManifest>();
  return { program: await buildProgram({ owners }), owners };
}

const sub = (program: Command, name: string): Command => {
  const c = program.commands.find((x) => x.name() === name);
  if (!c) throw new Error(`no command ${name}`);
  return c;
};

describe('the command index (a command builds only its own modules)', () => {
  it('the bundle carries the index of the full program: every top-level command, its help line and its modules', async () => {
    buildCli();
    const text = readFileSync(join(REPO_ROOT, 'dist', 'bundle', 'command-index.json'), 'utf8');
    const { program, owners } = await fullProgram();
    const want = commandIndexOf(program, owners, await loadModuleList());
    expect(parseCommandIndex(text)).toEqual(want);
    // The fixture is real: module commands name their modules, the program's own none.
    expect(want.commands.find((c) => c.name === 'domains')?.modules.length).toBeGreaterThan(0);
    expect(want.commands.find((c) => c.name === 'serve')?.modules).toEqual([]);
  });

  it('the help of the program, and of every top-level command, is the same as with the whole program built', async () => {
    const { program, owners } = await fullProgram();
    const index: CommandIndex = commandIndexOf(program, owners, await loadModuleList());
    const none = await buildProgram({ only: { index, command: '' } });
    expect(none.helpInformation()).toBe(program.helpInformation());
    // No module is built for the program's help: every top-level command is one line, with nothing under it.
    expect(none.commands.every((c) => c.commands.length === 0 && c.options.length === 0)).toBe(true);
    for (const { name } of index.commands) {
      const one = await buildProgram({ only: { index, command: name } });
      expect(one.helpInformation(), name).toBe(program.helpInformation());
      const [built, full] = [sub(one, name), sub(program, name)];
      expect(built.helpInformation(), name).toBe(full.helpInformation());
      for (const c of full.commands) expect(sub(built, c.name()).helpInformation(), `${name} ${c.name()}`).toBe(c.helpInformation());
    }
  });

  it('the shipped command prints the same help as the whole program', async () => {
    buildCli();
    const { program } = await fullProgram();
    const top = await runCli(['--help']);
    expect(top.code).toBe(0);
    expect(top.stdout).toBe(program.helpInformation());
    const domains = await runCli(['domains', '--help']);
    expect(domains.code).toBe(0);
    expect(domains.stdout).toBe(sub(program, 'domains').helpInformation());
  });

  it('which command the arguments run: plain cases only, anything else builds the whole program', () => {
    const index: CommandIndex = { commands: ['serve', 'domains', 'help-me'].map((name) => ({ name, term: name, description: '', hidden: false, modules: [] })) };
    expect(commandOf([], index)).toBe('');
    expect(commandOf(['--help'], index)).toBe('');
    expect(commandOf(['-V'], index)).toBe('');
    expect(commandOf(['help'], index)).toBe('');
    expect(commandOf(['domains', 'list', '--json'], index)).toBe('domains');
    expect(commandOf(['help', 'domains'], index)).toBe('domains');
    expect(commandOf(['help', 'domains', 'list'], index)).toBeUndefined();
    expect(commandOf(['nosuch'], index)).toBeUndefined();
    expect(commandOf(['help', 'nosuch'], index)).toBeUndefined();
    expect(commandOf(['--help', 'domains'], index)).toBeUndefined();
    expect(commandOf(['--bogus'], index)).toBeUndefined();
    expect(parseCommandIndex('{"commands":[{"name":"x"}]}')).toBeNull();
    expect(parseCommandIndex('not json')).toBeNull();
  });
});
