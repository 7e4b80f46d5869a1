import { statSync } from 'node:fs';
import { dirname, resolve } from 'node:path';

/**
 * Whether only root can change what `file` holds: root owns it and neither its
 * group nor others can write it, and the same holds for every directory above
 * it (a directory another user can write lets that user put another file in
 * its place; a sticky one, such as /tmp, does not, for a file root owns).
 */
export function onlyRootWrites(file: string): boolean {
  try {
    const st = statSync(file);
    if (st.uid !== 0 || (st.mode & 0o022) !== 0) return false;
    for (let dir = dirname(resolve(file)); ; dir = dirname(dir)) {
      const d = statSync(dir);
      if (d.uid !== 0 || ((d.mode & 0o022) !== 0 && (d.mode & 0o1000) === 0)) return false;
      if (dir === dirname(dir)) return true;
    }
  } catch {
    return false;
  }
}

/**
 * The settings file's values a root process may take paths and programs from
 * (the helper's daemon paths, the backup directory, the manifest key): all of
 * them when this process is not root (it has no more rights than the file's
 * writer), else only when only root can change the file (`onlyRootWrites`);
 * none otherwise (the environment alone then). docs/security.md, What root reads.
 */
export function trustedFileValues(file: string, values: Record<string, string>, uid: number | undefined = process.getuid?.()): Record<string, string> {
  if (uid !== 0) return values;
  return onlyRootWrites(file) ? values : {};
}
