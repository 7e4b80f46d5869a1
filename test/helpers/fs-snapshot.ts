import { createHash } from 'node:crypto';
import { lstatSync, readFileSync, readdirSync, readlinkSync } from 'node:fs';
import type { Stats } from 'node:fs';
import { join } from 'node:path';

/**
 * A content snapshot of a directory tree, for "nothing outside X changed"
 * checks: path → type, mode, owner, size, sha256 of a regular file's content,
 * a link's target. Nothing is followed or opened but regular files, so a FIFO
 * or a device in the tree is recorded by its type and never read; an entry the
 * caller cannot read is recorded as unreadable.
 */
export type FsSnapshot = Map<string, string>;

const kind = (st: Stats): string =>
  st.isDirectory() ? 'dir' : st.isFile() ? 'file' : st.isSymbolicLink() ? 'link' : st.isFIFO() ? 'fifo' : st.isSocket() ? 'socket' : st.isCharacterDevice() ? 'chr' : st.isBlockDevice() ? 'blk' : 'other';

function stamp(p: string, st: Stats): string {
  const head = `${kind(st)} ${(st.mode & 0o7777).toString(8)} ${st.uid}:${st.gid}`;
  if (st.isSymbolicLink()) return `${head} -> ${readlinkSync(p)}`;
  if (!st.isFile()) return st.isCharacterDevice() || st.isBlockDevice() ? `${head} rdev=${st.rdev}` : head;
  try {
    return `${head} ${st.size} ${createHash('sha256').update(readFileSync(p)).digest('hex')}`;
  } catch (err) {
    return `${head} ${st.size} unreadable:${(err as NodeJS.ErrnoException).code ?? 'error'}`;
  }
}

/** Every entry under `root` (root itself included), except the paths in `exclude` and what lies under them. */
export function snapshotTree(root: string, exclude: readonly string[] = []): FsSnapshot {
  const out: FsSnapshot = new Map();
  const walk = (p: string): void => {
    if (exclude.includes(p)) return;
    let st: Stats;
    try {
      st = lstatSync(p);
    } catch {
      return; // gone between readdir and lstat: the next snapshot says so
    }
    out.set(p, stamp(p, st));
    if (!st.isDirectory()) return;
    let names: string[];
    try {
      names = readdirSync(p);
    } catch (err) {
      out.set(p, `${out.get(p) ?? ''} unlistable:${(err as NodeJS.ErrnoException).code ?? 'error'}`);
      return;
    }
    for (const name of names.sort()) walk(join(p, name));
  };
  walk(root);
  return out;
}

/** The entries added, removed or changed between two snapshots, each as "added|removed|changed <path>: before → after". */
export function treeChanges(before: FsSnapshot, after: FsSnapshot): { path: string; what: string }[] {
  const out: { path: string; what: string }[] = [];
  for (const [p, v] of after) {
    const was = before.get(p);
    if (was === undefined) out.push({ path: p, what: `added ${p}: ${v}` });
    else if (was !== v) out.push({ path: p, what: `changed ${p}: ${was} → ${v}` });
  }
  for (const [p, v] of before) if (!after.has(p)) out.push({ path: p, what: `removed ${p}: ${v}` });
  return out.sort((a, b) => a.path.localeCompare(b.path));
}
