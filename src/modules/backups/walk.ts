import { lstat, readdir } from 'node:fs/promises';
import { join } from 'node:path';

/** Regular files and their bytes under `root` (symlinks are not followed): what a backup of the tree holds. */
export async function treeStats(root: string): Promise<{ files: number; bytes: number }> {
  let files = 0;
  let bytes = 0;
  const stack = [root];
  while (stack.length > 0) {
    const dir = stack.pop() ?? root;
    let entries;
    try {
      entries = await readdir(dir, { withFileTypes: true });
    } catch (err) {
      // A directory removed while walking (a maildir folder deleted): it is simply not there any more.
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') continue;
      throw err;
    }
    for (const e of entries) {
      const path = join(dir, e.name);
      if (e.isDirectory()) stack.push(path);
      else if (e.isFile()) {
        files++;
        bytes += await lstat(path).then((s) => s.size, () => 0);
      }
    }
  }
  return { files, bytes };
}

export const formatBytes = (n: number): string => {
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let v = n;
  let i = 0;
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return `${i === 0 ? v : v.toFixed(1)} ${units[i]}`;
};
