#!/usr/bin/env node
// npm run release -- --out DIR --base-url URL --key KEY.pem [options]
//
// Builds mailsvc's release: the package archive mailsvc-<version>.tar.gz (what
// npm pack ships, plus the built dist/ and the production node_modules, so a
// host needs no build tools), its .sha256, and each channel's feed tree with a
// version.json signed with Ed25519 (version.json.sig). The output directory is
// what a static HTTPS server serves: <out>/<channel>/version.json and
// <out>/<channel>/<version>/{mailsvc-<version>.tar.gz, .sha256, mailsvc-<version>/}.
// See docs/updates.md.
//
// Options:
//   --out DIR            where the feed trees go (created; earlier releases in it are kept)
//   --base-url URL       the https URL <out> is served at (channel feeds are <URL>/<channel>)
//   --key FILE           Ed25519 private key (PEM); default $MAILSVC_RELEASE_SIGNING_KEY
//   --channel C          stable, nightly or both (default both)
//   --version V          publish the working tree as version V (default: package.json's)
//   --node-modules DIR   copy this production node_modules instead of pruning a copy of ./node_modules
//   --package-dir DIR    publish this already staged package (skips building and staging)
//   --stage-only DIR     stage the package into DIR and stop (no archive, no feed)
//   --no-build           do not run npm run build first
import { createHash, createPrivateKey, createPublicKey, sign } from 'node:crypto';
import { cpSync, existsSync, mkdirSync, readFileSync, readdirSync, realpathSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import { basename, dirname, join, resolve } from 'node:path';
import { tmpdir } from 'node:os';
import { parseArgs } from 'node:util';
import { Buffer } from 'node:buffer';

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
    'no-build': { type: 'boolean', default: false },
  },
});

function fail(message) {
  process.stderr.write(`release: ${message}\n`);
  process.exit(2);
}
const say = (m) => process.stderr.write(`${m}\n`);
const run = (file, args, cwd = ROOT) => execFileSync(file, args, { cwd, stdio: ['ignore', 'pipe', 'inherit'], maxBuffer: 64 * 1024 * 1024 }).toString();
const SEMVER = /^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(-[0-9A-Za-z.-]+)?$/;

const keyFile = opt.key ?? process.env.MAILSVC_RELEASE_SIGNING_KEY;
if (!opt['stage-only']) {
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
  // The helper's SO_PEERCRED addon, compiled by npm ci: a host has no build tools (package.json "files" lists it).
  const addon = join('native', 'peercred', 'build', 'Release', 'peercred.node');
  if (!existsSync(join(into, addon))) fail(`${addon} is missing: build it with npm ci (or npm rebuild) first`);
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
  const migrations = migrationsOf(pkgDir);
  for (const channel of channels) {
    const channelDir = join(resolve(opt.out), channel);
    const versionDir = join(channelDir, version);
    rmSync(versionDir, { recursive: true, force: true });
    mkdirSync(versionDir, { recursive: true });
    cpSync(archive, join(versionDir, `${name}.tar.gz`));
    cpSync(`${archive}.sha256`, join(versionDir, `${name}.tar.gz.sha256`));
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
  process.stdout.write(`${JSON.stringify({ version, sha256: hex, channels, migrations })}\n`);
}

if (opt['package-dir']) {
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
