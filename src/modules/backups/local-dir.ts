import { chmodSync, chownSync, existsSync, mkdirSync, readFileSync, realpathSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';

const isRoot = (): boolean => process.getuid?.() === 0;

/** The `mailsvc` group's gid (the service reads the backups through it), or root's when the host has no such group. */
export function backupGroup(): number {
  const line = (existsSync('/etc/group') ? readFileSync('/etc/group', 'utf8') : '').split('\n').find((l) => l.split(':')[0] === 'mailsvc');
  const gid = Number(line?.split(':')[2]);
  return Number.isInteger(gid) ? gid : 0;
}

import { UnsafeBackupDir } from './errors.js';
export { UnsafeBackupDir };

/** Who other than root could write `path` ("owned by uid N", "writable by every user", "writable by group N"), or null; a sticky directory counts as root's when `stickyOk`. */
export function writableByOthers(path: string, stickyOk = false): string | null {
  const st = statSync(path);
  const sticky = stickyOk && (st.mode & 0o1000) !== 0;
  return st.uid !== 0 ? `owned by uid ${st.uid}` : (st.mode & 0o002) !== 0 && !sticky ? 'writable by every user' : (st.mode & 0o020) !== 0 && st.gid !== 0 && !sticky ? `writable by group ${st.gid}` : null;
}

/** Refuses `path` unless root owns it and only root can write it (a parent may be sticky, as /tmp). */
function checkOwned(path: string, leaf: boolean, localDir: string): void {
  const writable = writableByOthers(path, !leaf);
  if (writable) {
    throw new UnsafeBackupDir(`refusing to use the backup directory ${localDir}: ${path} is ${writable}, so another user could plant or change backups there; make it root's (chown root:root, chmod go-w) or set MAILSVC_BACKUP_LOCAL_DIR (in /etc/mailsvc/mailsvc.conf, root's) to a directory only root writes`);
  }
}

/**
 * LOCAL_DIR, safe for root to write backups into: made root:mailsvc 0750 when
 * missing (its parents root's 0755); refused when it or any parent could be
 * written by another user. A process that is not root (a checkout, tests)
 * makes it 0700 as before.
 */
export function prepareLocalDir(localDir: string): void {
  if (!isRoot()) {
    mkdirSync(localDir, { recursive: true, mode: 0o700 });
    return;
  }
  let existing = localDir;
  while (!existsSync(existing)) existing = dirname(existing);
  const missing = localDir.slice(existing.length).split('/').filter(Boolean);
  // Links resolved first: the real directories are the ones judged.
  const real = realpathSync(existing);
  for (let p = real; ; p = dirname(p)) {
    checkOwned(p, p === real && missing.length === 0, localDir);
    if (p === dirname(p)) break;
  }
  let p = real;
  for (const [i, name] of missing.entries()) {
    p = join(p, name);
    mkdirSync(p, { mode: 0o755 });
    if (i === missing.length - 1) shareReadOnly(p);
  }
}

/** A backup file or directory as root leaves it: root:mailsvc, 0640 (directories 0750): the service lists them, only root writes. */
export function shareReadOnly(path: string): void {
  if (!isRoot()) return;
  chownSync(path, 0, backupGroup());
  chmodSync(path, statSync(path).isDirectory() ? 0o750 : 0o640);
}
