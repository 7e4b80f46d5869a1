// `npm run build`: tsc, then the CLI bundle (rolldown) and the panel (vite), each
// written into a directory of its own and renamed into place, under a lock.
// So a second build in the same checkout (two `npm test` runs at once) waits
// for the first instead of rewriting dist/ under it, and a process running
// dist/bundle/mailsvc.js never sees a missing or half-written bundle: the
// replaced bundle stays (as dist/.old-*) for an hour, so a process that started
// on it still finds the chunks it loads later.
//
// `--if-changed`: nothing is built when dist/ was built from these very
// sources (dist/.build-stamp: every source file's path, size and time).
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, readdirSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
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

/** Puts `next` in place of `target` by renames; the replaced directory is kept for a while. */
function swap(next, target) {
  const old = join(dist, `.old-${target.split('/').pop()}-${Date.now()}-${process.pid}`);
  if (existsSync(target)) renameSync(target, old);
  renameSync(next, target);
}

function removeOld() {
  for (const e of readdirSync(dist)) {
    if (!e.startsWith('.old-') && !e.startsWith('.next-')) continue;
    const p = join(dist, e);
    // A replaced directory's age counts from its replacement (the time in its name); a leftover next-* from its making.
    const since = Number(/^\.old-[a-z]+-(\d+)-/.exec(e)?.[1] ?? statSync(p).mtimeMs);
    if (Date.now() - since > KEEP_OLD_MS) rmSync(p, { recursive: true, force: true });
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
  const bundleNext = join(dist, `.next-bundle-${process.pid}`);
  const panelNext = join(dist, `.next-panel-${process.pid}`);
  run(bin('tsc'), ['-p', 'tsconfig.build.json']);
  run(bin('rolldown'), ['-c', 'rolldown.config.mjs', '--silent'], { MAILSVC_BUNDLE_DIR: bundleNext });
  // Which modules each top-level command needs, and the help's lines for the others (src/cli/command-index.ts).
  run(process.execPath, ['scripts/command-index.mjs', bundleNext]);
  run(bin('vite'), ['build', '--config', 'panel/vite.config.mjs', '--outDir', panelNext, '--emptyOutDir', '--logLevel', 'warn']);
  swap(bundleNext, join(dist, 'bundle'));
  swap(panelNext, join(dist, 'panel'));
  writeFileSync(stampFile, want);
  removeOld();
}
