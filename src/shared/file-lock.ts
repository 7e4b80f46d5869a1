import { closeSync, fchmodSync, openSync, readFileSync, rmSync, writeSync } from 'node:fs';
import { AppError } from './errors.js';

/** What a lock file holds: the owner's pid and kernel start time, what it does, since when. */
export type LockHolder = { pid: number; start: string | null; what: string; since: string };

export type LockOptions = {
  /** Runs after a stale lock (its process is gone) was removed: clean up what that run left. */
  onStale?: (previous: string) => void;
  /** The conflict's text for a live holder (default: "<what> is running (pid, since); wait for it to finish"). */
  busy?: (held: LockHolder) => string;
  /** The lock file's mode (default 0600); 0644 lets processes of other users read who holds it. */
  mode?: number;
};

const defaultBusy = (held: LockHolder): string => `${held.what} is running (pid ${held.pid}, since ${held.since}); wait for it to finish`;

/** The kernel's start time of a process (field 22 of /proc/<pid>/stat), so a reused pid is not taken for the old owner. */
function processStart(pid: number): string | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19] ?? null;
  } catch {
    return null;
  }
}

/**
 * Whether the holder still runs: its pid exists (EPERM: it does, under another
 * user) and, when /proc shows it, started when the lock says. A process this
 * one cannot see in /proc (hidepid, ProtectProc=invisible) counts as alive.
 */
function alive(body: LockHolder): boolean {
  try {
    process.kill(body.pid, 0);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EPERM') return false;
  }
  if (body.start === null) return true;
  const now = processStart(body.pid);
  return now === null || now === body.start;
}

function readHolder(path: string): LockHolder | null {
  try {
    const held = JSON.parse(readFileSync(path, 'utf8')) as LockHolder;
    return typeof held.pid === 'number' ? held : null;
  } catch {
    return null;
  }
}

/** The live holder of the lock at `path`, or null (no lock, an unreadable one, or one whose process is gone). */
export function lockHolder(path: string): LockHolder | null {
  const held = readHolder(path);
  return held && alive(held) ? held : null;
}

/**
 * Takes the lock file `path` (made with O_EXCL, holding the owner's pid and
 * start time) and answers its release. A lock whose process is gone (killed
 * with SIGKILL, host rebooted) is stale: it is removed and `onStale` runs. A
 * live one is a conflict (409, CLI exit 3) naming the run. Works across
 * processes and within one (a second taker in the same process is refused too).
 */
export function takeLock(path: string, what: string, opts: LockOptions = {}): () => void {
  const body: LockHolder = { pid: process.pid, start: processStart(process.pid), what, since: new Date().toISOString() };
  const text = JSON.stringify(body);
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      const fd = openSync(path, 'wx', opts.mode ?? 0o600);
      try {
        // The umask may have narrowed the mode: a reader under another user needs what was asked.
        if (opts.mode !== undefined) fchmodSync(fd, opts.mode);
        writeSync(fd, text);
      } finally {
        closeSync(fd);
      }
      return () => {
        // Only our own lock: never one a later run took after ours was (wrongly) judged stale.
        let now: string | null = null;
        try {
          now = readFileSync(path, 'utf8');
        } catch {
          return;
        }
        if (now === text) rmSync(path, { force: true });
      };
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    }
    // Written but empty or unreadable: the owner died between open and write, or is writing now; a second look decides.
    const held = readHolder(path);
    if (held && alive(held)) throw new AppError('conflict', (opts.busy ?? defaultBusy)(held));
    if (held || attempt > 0) {
      rmSync(path, { force: true });
      opts.onStale?.(held?.what ?? 'an earlier run');
    }
  }
  throw new AppError('conflict', `cannot take ${path}; another run keeps taking it`);
}

/** Throws the conflict a live lock at `path` would give, without writing anything (checked before work is queued). */
export function checkLock(path: string, busy: (held: LockHolder) => string = defaultBusy): void {
  const held = lockHolder(path);
  if (held) throw new AppError('conflict', busy(held));
}
