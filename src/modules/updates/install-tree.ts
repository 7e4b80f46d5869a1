import { existsSync, mkdirSync, readlinkSync, renameSync, rmSync, symlinkSync } from 'node:fs';
import { basename, isAbsolute, join, resolve } from 'node:path';

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

  /** Scratch space for downloads and unpacking, on the same file system as releases/ (renames stay atomic). */
  incoming(): string {
    const dir = join(this.releases, '.incoming');
    rmSync(dir, { recursive: true, force: true });
    mkdirSync(dir, { recursive: true, mode: 0o750 });
    return dir;
  }

  exists(version: string): boolean {
    return existsSync(this.releaseDir(version));
  }
}
