import { lstat, readdir } from 'node:fs/promises';
import { join } from 'node:path';

/**
 * Regular files and their bytes under `root` (symlinks are not followed): what
 * a backup of the tree holds; `tarBytes` estimates the tar stream (512-byte
 * header and padding per entry), the scale of the progress bar.
 */
export async function treeStats(root: string): Promise<{ files: number; bytes: number; tarBytes: number }> {
  let files = 0;
  let bytes = 0;
  let tarBytes = 0;
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
      tarBytes += 512;
      if (e.isDirectory()) stack.push(path);
      else if (e.isFile()) {
        files++;
        const size = await lstat(path).then((s) => s.size, () => 0);
        bytes += size;
        tarBytes += Math.ceil(size / 512) * 512;
      }
    }
  }
  return { files, bytes, tarBytes };
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
