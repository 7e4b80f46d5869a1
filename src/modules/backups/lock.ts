import { closeSync, openSync, readFileSync, rmSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { AppError } from '../../shared/errors.js';

type LockBody = { pid: number; start: string | null; what: string; since: string };

/** The kernel's start time of a process (field 22 of /proc/<pid>/stat), so a reused pid is not taken for the old owner. */
function processStart(pid: number): string | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19] ?? null;
  } catch {
    return null;
  }
}

function alive(body: LockBody): boolean {
  try {
    process.kill(body.pid, 0);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EPERM') return false;
  }
  return body.start === null || processStart(body.pid) === body.start;
}

/**
 * One backup, verify or restore at a time per LOCAL_DIR: `.lock` made with
 * O_EXCL holding the owner's pid and start time. A lock whose process is gone
 * (killed with SIGKILL, host rebooted) is stale: it is removed and `onStale`
 * runs (clean up what that run left). A live one is a conflict naming the run.
 */
export function takeLock(dir: string, what: string, onStale: (previous: string) => void): () => void {
  const path = join(dir, '.lock');
  const body: LockBody = { pid: process.pid, start: processStart(process.pid), what, since: new Date().toISOString() };
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      const fd = openSync(path, 'wx', 0o600);
      writeSync(fd, JSON.stringify(body));
      closeSync(fd);
      return () => rmSync(path, { force: true });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    }
    let held: LockBody | null = null;
    try {
      held = JSON.parse(readFileSync(path, 'utf8')) as LockBody;
    } catch {
      // Written but empty: the owner died between open and write, or is writing now; a second look decides.
    }
    if (held && alive(held)) throw new AppError('conflict', `${held.what} is running (pid ${held.pid}, since ${held.since}); wait for it to finish`);
    if (held || attempt > 0) {
      rmSync(path, { force: true });
      onStale(held?.what ?? 'an earlier run');
    }
  }
  throw new AppError('conflict', `cannot take ${path}; another run keeps taking it`);
}

/** Throws the conflict a live `.lock` would give, without writing anything (the service cannot write LOCAL_DIR). */
export function checkLock(dir: string): void {
  let held: LockBody | null = null;
  try {
    held = JSON.parse(readFileSync(join(dir, '.lock'), 'utf8')) as LockBody;
  } catch {
    return;
  }
  if (held && typeof held.pid === 'number' && alive(held)) throw new AppError('conflict', `${held.what} is running (pid ${held.pid}, since ${held.since}); wait for it to finish`);
}
