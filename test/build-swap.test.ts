import { spawn } from 'node:child_process';
import { cpSync, lstatSync, mkdirSync, mkdtempSync, readFileSync, readlinkSync, realpathSync, rmSync, statSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CLI_BIN, REPO_ROOT } from './helpers/cli.js';

/**
 * A build replaces dist/bundle while processes run it (a test starting the
 * CLI, `mailsvc` on a host during an update): whoever opens
 * dist/bundle/mailsvc.js at any moment finds a whole bundle. A copy of the
 * tree's build inputs (node_modules shared through a symlink) starts from this
 * checkout's bundle; the build then runs twice there while the bundle is
 * started in a loop and its path polled as fast as the event loop allows.
 */
const INPUTS = ['src', 'panel', 'scripts', 'package.json', 'package-lock.json', 'rolldown.config.mjs', 'tsconfig.json', 'tsconfig.build.json'];

type Exit = { code: number | null; out: string };
function run(cwd: string, args: string[]): Promise<Exit> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, args, { cwd, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (out += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (out += d));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, out }));
  });
}

describe('the build replaces the bundle in one step', { timeout: 20 * 60_000 }, () => {
  let copy: string;
  const version = (JSON.parse(readFileSync(join(REPO_ROOT, 'package.json'), 'utf8')) as { version: string }).version;

  beforeAll(() => {
    copy = mkdtempSync(join(tmpdir(), 'mailsvc-build-swap-'));
    for (const p of INPUTS) cpSync(join(REPO_ROOT, p), join(copy, p), { recursive: true });
    symlinkSync(realpathSync(join(REPO_ROOT, 'node_modules')), join(copy, 'node_modules'));
    // This checkout's bundle as the copy's first version, linked the way the build links it.
    mkdirSync(join(copy, 'dist'));
    cpSync(realpathSync(join(REPO_ROOT, 'dist', 'bundle')), join(copy, 'dist', '.bundle-0-first'), { recursive: true });
    symlinkSync('.bundle-0-first', join(copy, 'dist', 'bundle'));
  });
  afterAll(() => {
    if (copy) rmSync(copy, { recursive: true, force: true });
  });

  it('dist/bundle is a link to a version directory in this checkout', () => {
    const link = join(REPO_ROOT, 'dist', 'bundle');
    expect(lstatSync(link).isSymbolicLink()).toBe(true);
    expect(readlinkSync(link)).toMatch(/^\.bundle-\d+-\d+$/);
    expect(statSync(CLI_BIN).isFile()).toBe(true);
  });

  it('node dist/bundle/mailsvc.js starts every time while the build runs twice', async () => {
    const entry = join(copy, 'dist', 'bundle', 'mailsvc.js');
    const versions = new Set<string>([readlinkSync(join(copy, 'dist', 'bundle'))]);
    let building = true;
    const failures: string[] = [];
    let starts = 0;
    let polls = 0;
    let pollMisses = 0;

    // As fast as the event loop turns: the path is there, whatever the build is doing.
    const poll = async (): Promise<void> => {
      while (building) {
        polls++;
        try {
          statSync(entry);
          versions.add(readlinkSync(join(copy, 'dist', 'bundle')));
        } catch {
          pollMisses++;
        }
        await new Promise((r) => setImmediate(r));
      }
    };
    // Whole starts of the CLI, one after the other; --help loads the start-up chunk as well.
    const starter = async (): Promise<void> => {
      while (building) {
        const args = starts % 2 === 0 ? ['--version'] : ['--help'];
        const r = await run(copy, [entry, ...args]);
        starts++;
        const ok = r.code === 0 && (args[0] === '--help' ? r.out.includes('Usage: mailsvc') : r.out.trim() === version);
        if (!ok) failures.push(`${args.join(' ')} → exit ${r.code}: ${r.out.slice(0, 400)}`);
      }
    };
    const loops = Promise.all([poll(), starter()]);
    const builds: Exit[] = [];
    try {
      for (let i = 0; i < 2; i++) builds.push(await run(copy, ['scripts/build.mjs']));
    } finally {
      building = false;
      await loops;
    }
    versions.add(readlinkSync(join(copy, 'dist', 'bundle')));

    for (const b of builds) expect(b.code, b.out).toBe(0);
    expect(failures).toEqual([]);
    expect(pollMisses).toBe(0);
    // Both builds put a new version in place, and the loops ran across them.
    expect(versions.size).toBeGreaterThanOrEqual(3);
    expect(starts).toBeGreaterThan(4);
    expect(polls).toBeGreaterThan(1000);
    // The versions still linked or replaced within the hour are kept (a process started on one loads its chunks later).
    for (const v of versions) expect(statSync(join(copy, 'dist', v, 'mailsvc.js')).isFile()).toBe(true);
  });
});
