import { chmodSync, chownSync, renameSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { randomBytes } from 'node:crypto';

/** Writes through a temp file in the same directory and a rename, so a reader never sees half a file. */
export function writeFileAtomic(path: string, content: string, mode: number, owner?: { uid: number; gid: number }): void {
  const tmp = join(dirname(path), `.${randomBytes(6).toString('hex')}.tmp`);
  writeFileSync(tmp, content, { mode });
  chmodSync(tmp, mode);
  // Only root can give a file away; anyone else writes their own files.
  if (owner && process.getuid?.() === 0) chownSync(tmp, owner.uid, owner.gid);
  renameSync(tmp, path);
}
