/**
 * Real releases for the update tests: `npm run release` (scripts/release.mjs)
 * run on the working tree with other version numbers, and a local HTTPS
 * server (the test CA's certificate) serving the feed trees it writes.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { join, normalize } from 'node:path';
import { fileURLToPath } from 'node:url';
import { REPO_ROOT } from './cli.js';

const tlsDir = fileURLToPath(new URL('../fixtures/tls/', import.meta.url));
export const TEST_CA = join(tlsDir, 'ca.pem');
const RELEASE = join(REPO_ROOT, 'scripts', 'release.mjs');
/** One production node_modules for every test release (pruning takes half a minute; copying a few seconds). */
const NODE_MODULES_CACHE = join(REPO_ROOT, 'var', 'test-cache', 'release-node-modules');

function release(args: string[]): string {
  return execFileSync(process.execPath, [RELEASE, ...args], { cwd: REPO_ROOT, stdio: ['ignore', 'pipe', 'pipe'], maxBuffer: 16 * 1024 * 1024 }).toString();
}

/** The production dependencies, made once (a pruned copy of node_modules) and kept in var/test-cache/. */
export function productionNodeModules(): string {
  const lock = join(REPO_ROOT, 'package-lock.json');
  const stamp = join(NODE_MODULES_CACHE, '.lock-mtime');
  const want = String(statSync(lock).mtimeMs);
  // A cache from before the release carried its own Node.js holds addons built for this one: made again.
  const forRuntime = existsSync(join(NODE_MODULES_CACHE, '.mailsvc-runtime'));
  if (forRuntime && existsSync(stamp) && readFileSync(stamp, 'utf8') === want) return NODE_MODULES_CACHE;
  // Another test run beside this one may build the same cache: each stages into its own
  // directory, and the finished copy is renamed into place (the loser's is thrown away).
  const cache = join(REPO_ROOT, 'var', 'test-cache');
  mkdirSync(cache, { recursive: true });
  const stage = join(cache, `stage-${process.pid}-${Date.now()}`);
  release(['--stage-only', stage, '--no-build']);
  writeFileSync(join(stage, 'node_modules', '.lock-mtime'), want);
  if (!(existsSync(stamp) && readFileSync(stamp, 'utf8') === want)) {
    const old = `${NODE_MODULES_CACHE}.old-${process.pid}`;
    try {
      renameSync(NODE_MODULES_CACHE, old);
    } catch {
      // none yet, or another run moved it first
    }
    try {
      renameSync(join(stage, 'node_modules'), NODE_MODULES_CACHE);
    } catch {
      // another run put its copy in place first: that one is used
    }
    rmSync(old, { recursive: true, force: true });
  }
  rmSync(stage, { recursive: true, force: true });
  return NODE_MODULES_CACHE;
}

/** The working tree staged as a package of `version` (keys/release-signing.pub from `keyFile`). */
export function stageRelease(dir: string, version: string, keyFile: string): string {
  release(['--stage-only', dir, '--no-build', '--version', version, '--key', keyFile, '--node-modules', productionNodeModules()]);
  return dir;
}

/**
 * Publishes a staged package into `out` (archive, .sha256, signed version.json) as `npm run release` does;
 * the Debian package too with `deb` (it takes a minute: the update tests do without).
 */
export function publishRelease(pkgDir: string, out: string, baseUrl: string, keyFile: string, channel: 'stable' | 'nightly' | 'both' = 'both', deb = false): { version: string; sha256: string; deb: string | null } {
  const args = ['--package-dir', pkgDir, '--out', out, '--base-url', baseUrl, '--key', keyFile, '--channel', channel, ...(deb ? [] : ['--no-deb'])];
  return JSON.parse(release(args)) as { version: string; sha256: string; deb: string | null };
}

/** Builds the Debian package of a staged package into `outDir`; its path. */
export function buildDebPackage(pkgDir: string, outDir: string): string {
  return (JSON.parse(release(['--package-dir', pkgDir, '--deb-only', outDir])) as { deb: string }).deb;
}

export type FeedServer = { origin: string; hostPort: string; requests: string[]; close(): Promise<void> };

/** A static HTTPS server over `root` (GET only, no directory listings), on a free port of 127.0.0.1. */
export async function startFeedServer(root: string): Promise<FeedServer> {
  const requests: string[] = [];
  const server: Server = createServer({ key: readFileSync(join(tlsDir, 'server-key.pem')), cert: readFileSync(join(tlsDir, 'server-cert.pem')) }, (req, res) => {
    const path = normalize(decodeURIComponent(new URL(req.url ?? '/', 'https://x').pathname));
    requests.push(path);
    const file = join(root, path);
    if (req.method !== 'GET' || path.includes('..') || !existsSync(file) || !statSync(file).isFile()) {
      res.writeHead(404).end('not found');
      return;
    }
    const body = readFileSync(file);
    res.writeHead(200, { 'content-length': body.length, 'content-type': 'application/octet-stream' }).end(body);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as AddressInfo).port;
  return {
    origin: `https://localhost:${port}`,
    hostPort: `localhost:${port}`,
    requests,
    close: () => new Promise<void>((r) => { server.closeAllConnections(); server.close(() => r()); }),
  };
}

/** A broken copy of a staged package: its `db migrate` changes data, then fails or succeeds; its `serve` may refuse to start. */
export function breakPackage(staged: string, into: string, version: string, how: { failMigrate?: boolean; failStart?: boolean }): string {
  execFileSync('cp', ['-al', staged, into]);
  const pkg = JSON.parse(readFileSync(join(into, 'package.json'), 'utf8')) as { version: string };
  pkg.version = version;
  rmSync(join(into, 'package.json'));
  writeFileSync(join(into, 'package.json'), JSON.stringify(pkg, null, 2));
  // Chunks import the entry file, so it stays where it is: a guard goes in front of its code.
  const entry = join(into, 'dist', 'bundle', 'mailsvc.js');
  const original = readFileSync(entry, 'utf8');
  rmSync(entry); // a hard link to the staged release: never write through it
  const shebang = original.startsWith('#!') ? original.slice(0, original.indexOf('\n') + 1) : '';
  const guard = `import { spawnSync as __updateTestSpawn } from 'node:child_process';
if (!process.env.UPDATE_TEST_REAL) {
  const args = process.argv.slice(2);
  const run = (a) => __updateTestSpawn(process.execPath, [process.argv[1], ...a], { stdio: 'inherit', env: { ...process.env, UPDATE_TEST_REAL: '1' } }).status ?? 1;
  if (args[0] === 'db' && args[1] === 'migrate') {
    if (run(args) !== 0) process.exit(1);
    run(['limits', 'set', 'greylist-delay', '1']); // a data migration
    if (${how.failMigrate === true}) { console.error('migration 0099_broken failed: duplicate column'); process.exit(1); }
    process.exit(0);
  }
  if (args[0] === 'serve' && ${how.failStart === true}) { console.error('this release cannot start'); process.exit(1); }
}
`;
  writeFileSync(entry, shebang + guard + original.slice(shebang.length));
  return into;
}
