// `npm run build`: tsc, then the CLI bundle (rolldown) and the panel (vite), each
// written into a versioned directory of its own (dist/.bundle-<time>-<pid>,
// dist/.panel-…), under a lock. dist/bundle and dist/panel are symbolic links
// to the current version, replaced by one rename(2) of a new link over the old:
// a process that opens dist/bundle/mailsvc.js at any moment of a build finds
// the old bundle or the new one, never none (two renames of directories left a
// moment with no bundle at all). A second build in the same checkout waits for
// the first. Node runs the main file by its real path, so a process started on
// a version loads that version's chunks later: a replaced version is kept for
// an hour after its replacement.
//
// `--if-changed`: nothing is built when dist/ was built from these very
// sources (dist/.build-stamp: every source file's path, size and time).
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, lstatSync, mkdirSync, readFileSync, readdirSync, readlinkSync, renameSync, rmSync, statSync, symlinkSync, utimesSync, writeFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const dist = join(root, 'dist');
const lock = join(dist, '.build-lock');
const stampFile = join(dist, '.build-stamp');
const LOCK_WAIT_MS = 15 * 60_000;
const KEEP_OLD_MS = 60 * 60_000;

/** Every file the build reads: the sources (not the tests), the panel, the build settings. */
function stamp() {
  const h = createHash('sha256');
  const add = (p) => {
    const s = statSync(p);
    h.update(`${relative(root, p)}\0${s.size}\0${s.mtimeMs}\n`);
  };
  const walk = (dir) => {
    for (const e of readdirSync(dir, { withFileTypes: true }).sort((a, b) => a.name.localeCompare(b.name))) {
      const p = join(dir, e.name);
      if (e.isDirectory()) {
        if (e.name !== 'node_modules') walk(p);
      } else if (!e.name.endsWith('.test.ts')) add(p);
    }
  };
  for (const d of ['src', 'panel']) if (existsSync(join(root, d))) walk(join(root, d));
  for (const f of ['package.json', 'package-lock.json', 'rolldown.config.mjs', 'tsconfig.json', 'tsconfig.build.json']) if (existsSync(join(root, f))) add(join(root, f));
  return h.digest('hex');
}

const alive = (pid) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return err.code === 'EPERM';
  }
};
const sleep = (ms) => Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);

/** mkdir is atomic: the lock is the directory, its `pid` file names the holder; a dead holder's lock is taken over. */
function takeLock() {
  mkdirSync(dist, { recursive: true });
  const end = Date.now() + LOCK_WAIT_MS;
  let said = false;
  for (;;) {
    try {
      mkdirSync(lock);
      writeFileSync(join(lock, 'pid'), String(process.pid));
      return;
    } catch (err) {
      if (err.code !== 'EEXIST') throw err;
    }
    let holder = NaN;
    try {
      holder = Number(readFileSync(join(lock, 'pid'), 'utf8'));
    } catch {
      // Just created, pid not written yet: wait.
    }
    if (Number.isInteger(holder) && holder > 0 && !alive(holder)) {
      // Taken over by a rename (only one process's rename of that directory succeeds), then checked: if what
      // was moved is not the dead holder's lock any more, another build just took it over and it goes back.
      const stale = `${lock}-stale-${process.pid}`;
      try {
        renameSync(lock, stale);
      } catch {
        continue;
      }
      let moved = NaN;
      try {
        moved = Number(readFileSync(join(stale, 'pid'), 'utf8'));
      } catch {
        // no pid: a lock being made; put back below
      }
      if (moved === holder) rmSync(stale, { recursive: true, force: true });
      else {
        try {
          renameSync(stale, lock);
        } catch {
          rmSync(stale, { recursive: true, force: true });
        }
      }
      continue;
    }
    if (Date.now() > end) throw new Error(`another build (pid ${holder}) holds ${lock} for more than ${LOCK_WAIT_MS / 60_000} minutes`);
    if (!said) process.stderr.write(`mailsvc build: waiting for the build running as pid ${holder}…\n`);
    said = true;
    sleep(200);
  }
}

function run(cmd, args, env = {}) {
  const r = spawnSync(cmd, args, { cwd: root, stdio: 'inherit', env: { ...process.env, ...env } });
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(' ')} failed (exit ${r.status ?? r.signal})`);
}

/**
 * Points `dist/<name>` at the version `next` (a directory in dist/) with one
 * rename of a new link over the old one. A checkout built before links were used
 * has a real directory there: it is moved aside first, once.
 */
function swap(next, name) {
  const target = join(dist, name);
  const link = join(dist, `.link-${name}-${process.pid}`);
  rmSync(link, { force: true });
  symlinkSync(next.split('/').pop(), link);
  let previous = null;
  try {
    const st = lstatSync(target);
    if (st.isSymbolicLink()) previous = join(dist, readlinkSync(target));
    else renameSync(target, join(dist, `.${name}-${Date.now()}-${process.pid}-dir`));
  } catch (err) {
    if (err.code !== 'ENOENT') throw err;
  }
  renameSync(link, target);
  // The replaced version's time now counts from its replacement (removeOld keeps it an hour).
  if (previous && previous !== next && existsSync(previous)) {
    const now = new Date();
    utimesSync(previous, now, now);
  }
}

/** Versions no link points at, replaced more than an hour ago (their time is the replacement's). */
function removeOld() {
  const current = new Set();
  for (const name of ['bundle', 'panel']) {
    try {
      current.add(readlinkSync(join(dist, name)));
    } catch {
      // no link yet
    }
  }
  for (const e of readdirSync(dist)) {
    if (!/^\.(bundle|panel|next-bundle|next-panel|old-[a-z]+)-/.test(e) || current.has(e)) continue;
    const p = join(dist, e);
    if (Date.now() - statSync(p).mtimeMs > KEEP_OLD_MS) rmSync(p, { recursive: true, force: true });
  }
}

const ifChanged = process.argv.includes('--if-changed');
const bin = (name) => join(root, 'node_modules', '.bin', name);
takeLock();
try {
  const want = stamp();
  const built = existsSync(stampFile) ? readFileSync(stampFile, 'utf8') : '';
  // Up to date: nothing to build (no process.exit here: the lock must be released below).
  const upToDate = ifChanged && built === want && existsSync(join(dist, 'bundle', 'mailsvc.js')) && existsSync(join(dist, 'panel', 'index.html'));
  if (!upToDate) build(want);
} finally {
  rmSync(lock, { recursive: true, force: true });
}

function build(want) {
  const version = `${Date.now()}-${process.pid}`;
  const bundleNext = join(dist, `.bundle-${version}`);
  const panelNext = join(dist, `.panel-${version}`);
  run(bin('tsc'), ['-p', 'tsconfig.build.json']);
  run(bin('rolldown'), ['-c', 'rolldown.config.mjs', '--silent'], { MAILSVC_BUNDLE_DIR: bundleNext });
  // Which modules each top-level command needs, and the help's lines for the others (src/cli/command-index.ts).
  run(process.execPath, ['scripts/command-index.mjs', bundleNext]);
  run(bin('vite'), ['build', '--config', 'panel/vite.config.mjs', '--outDir', panelNext, '--emptyOutDir', '--logLevel', 'warn']);
  swap(bundleNext, 'bundle');
  swap(panelNext, 'panel');
  writeFileSync(stampFile, want);
  removeOld();
}
