import { renameSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { randomBytes } from 'node:crypto';

/** Writes through a temp file in the same directory and a rename, so a reader never sees half a file. */
export function writeFileAtomic(path: string, content: string, mode: number): void {
  const tmp = join(dirname(path), `.${randomBytes(6).toString('hex')}.tmp`);
  writeFileSync(tmp, content, { mode });
  renameSync(tmp, path);
}
