import { existsSync, lstatSync, mkdirSync, readlinkSync, renameSync, rmSync, symlinkSync } from 'node:fs';
import { AppError } from '../../shared/errors.js';
import { basename, isAbsolute, join, resolve } from 'node:path';
import { exec } from '../../adapters/exec.js';

/**
 * Makes a release tree root's code: with `chown` every entry root:root (links
 * themselves, never followed), and in any case directories 0755, files
 * 0644 or 0755, no setuid/setgid bit, nothing group- or other-writable.
 */
export async function lockDownTree(dir: string, chown: boolean): Promise<void> {
  // chmod follows a link named on its command line: only a real directory is handed to it.
  if (!lstatSync(dir).isDirectory()) throw new AppError('conflict', `${dir} is not a directory: refusing to set its owner and modes`);
  if (chown) await exec('chown', ['-R', '-P', '-h', '0:0', dir], { timeoutMs: 600_000 });
  // chmod never follows the links it meets inside a tree.
  await exec('chmod', ['-R', 'u=rwX,go=rX,ug-s', dir], { timeoutMs: 600_000 });
}

/**
 * An installation: `<root>/releases/<version>/` (each an unpacked package) and
 * `<root>/current`, a symlink to the release that runs. The units start
 * `<root>/current/dist/bundle/mailsvc.js`, so switching the link and
 * restarting is the whole switch.
 */
export class InstallTree {
  constructor(readonly root: string) {}

  get releases(): string {
    return join(this.root, 'releases');
  }
  get current(): string {
    return join(this.root, 'current');
  }
  releaseDir(version: string): string {
    return join(this.releases, version);
  }

  /**
   * Root (the update job) works only in a tree the service user cannot
   * change: the installation root and releases/ are root's real directories,
   * writable by nobody else. `mailsvc install` makes them so.
   */
  assertRootOwned(): void {
    for (const dir of [this.root, this.releases]) {
      let st;
      try {
        st = lstatSync(dir);
      } catch {
        continue; // made below, by root
      }
      if (!st.isDirectory() || st.uid !== 0 || (st.mode & 0o022) !== 0) {
        throw new AppError('conflict', `${dir} must be a directory owned by root and writable by no one else (run mailsvc install again to set the owners): refusing to update as root`);
      }
    }
  }

  /** The release directory `current` points at, or null when there is none. */
  currentTarget(): string | null {
    try {
      const t = readlinkSync(this.current);
      return isAbsolute(t) ? t : resolve(this.root, t);
    } catch {
      return null;
    }
  }

  /**
   * Points `current` at `dir` atomically: a new link under a temporary name,
   * renamed over the old one (rename(2) replaces it in one step; there is no
   * moment without a `current`).
   */
  switchTo(dir: string): void {
    mkdirSync(this.root, { recursive: true });
    const tmp = join(this.root, `.current-${process.pid}`);
    rmSync(tmp, { force: true });
    symlinkSync(join('releases', basename(dir)), tmp);
    renameSync(tmp, this.current);
  }

  /** Database snapshots taken before an update's migrations: root's, 0700, beside the releases (never in the service's data directory). */
  get snapshots(): string {
    return join(this.root, 'snapshots');
  }

  /** Scratch space for downloads and unpacking, on the same file system as releases/ (renames stay atomic). */
  incoming(): string {
    const dir = join(this.releases, '.incoming');
    rmSync(dir, { recursive: true, force: true });
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    return dir;
  }

  exists(version: string): boolean {
    return existsSync(this.releaseDir(version));
  }
}

/** Where `mailsvc install` puts the command every unit starts. */
export const COMMAND_LINK_PATH = '/usr/local/bin/mailsvc';

/**
 * A host installed from a release older than the launcher has its command
 * link on `<root>/current/dist/bundle/mailsvc.js` (started by the host's
 * node); a release that carries its own runtime must be started by its
 * `bin/mailsvc`. After `current` switched, the link follows the release it
 * points at: on `current/bin/mailsvc` when that exists, else on the bundle.
 * Only a link that points into this tree's `current` is touched (never a
 * command some other installation owns). Returns the link's text before,
 * to put back on a rollback, or null when nothing changed.
 */
export function followCommandLink(tree: InstallTree, link = COMMAND_LINK_PATH): string | null {
  let before: string;
  try {
    if (!lstatSync(link).isSymbolicLink()) return null;
    before = readlinkSync(link);
  } catch {
    return null;
  }
  const launcher = join(tree.current, 'bin', 'mailsvc');
  const bundle = join(tree.current, 'dist', 'bundle', 'mailsvc.js');
  if (before !== launcher && before !== bundle) return null;
  const want = existsSync(launcher) ? launcher : bundle;
  if (want === before) return null;
  setLink(link, want);
  return before;
}

/** Replaces the link at `link` by one to `target` in one rename(2). */
export function setLink(link: string, target: string): void {
  const tmp = `${link}.mailsvc-${process.pid}`;
  rmSync(tmp, { force: true });
  symlinkSync(target, tmp);
  renameSync(tmp, link);
}
