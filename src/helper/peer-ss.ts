/**
 * Reading `ss` output and /proc files to learn who holds the other end of a
 * Unix socket connection (Node has no SO_PEERCRED). Pure functions: the I/O is
 * in peer-identity.ts.
 *
 * `ss -xnH src <path>` lists the helper's own sockets only (ss filters on the
 * socket's real name), one per line: `u_str ESTAB 0 0 <path> <inode> * <peer inode>`.
 * Nothing in those lines comes from a client, so they are read as they are.
 *
 * `ss -xpnH` lists every Unix socket with the processes holding it:
 * `u_str ESTAB 0 0 <name> <inode> * <peer inode> users:(("<comm>",pid=<pid>,fd=<fd>),…)`.
 * A client chooses its socket's name and its process name (comm), and both may
 * hold spaces, digits, quotes and newlines, so a line of that output can be
 * forged. It is only a list of candidates: each `pid=…,fd=…` pair is believed
 * only once `/proc/<pid>/fd/<fd>` is seen to be the peer's socket.
 */

/** Our socket's inode → its peer's inode, from `ss -xnH src <path>` (no `-p`: each line ends with the peer inode). */
export function serverPeerInodes(ssOutput: string): Map<number, number> {
  const out = new Map<number, number>();
  const seen = new Set<number>();
  for (const line of ssOutput.split('\n')) {
    const t = line.trim().split(/\s+/);
    if (t.length < 8 || t[0] !== 'u_str') continue;
    const peer = Number(t[t.length - 1]);
    const star = t[t.length - 2];
    const local = Number(t[t.length - 3]);
    if (star !== '*' || !Number.isSafeInteger(local) || !Number.isSafeInteger(peer) || peer <= 0 || local <= 0) continue;
    // An inode listed twice is not trusted at all (it cannot happen in ss's own output).
    if (seen.has(local)) out.delete(local);
    else out.set(local, peer);
    seen.add(local);
  }
  return out;
}

export type Holder = { pid: number; fd: number };

/** At most this many candidate pairs are checked for one peer: more means the output was stuffed. */
export const MAX_CANDIDATES = 32;

/**
 * The `pid=…,fd=…` pairs on the lines of `ss -xpnH` output that name `inode`
 * as a word; to be checked against /proc before they are believed. Null when
 * there are more than MAX_CANDIDATES.
 */
export function holderCandidates(ssOutput: string, inode: number): Holder[] | null {
  const word = new RegExp(`(?:^|\\s)${inode}(?:\\s|$)`);
  const found = new Map<string, Holder>();
  for (const line of ssOutput.split('\n')) {
    if (!word.test(line)) continue;
    for (const m of line.matchAll(/pid=(\d{1,10}),fd=(\d{1,10})/g)) {
      const pid = Number(m[1]);
      const fd = Number(m[2]);
      if (pid > 0) found.set(`${pid}/${fd}`, { pid, fd });
    }
  }
  return found.size > MAX_CANDIDATES ? null : [...found.values()];
}

/** `socket:[12345]` (a readlink of /proc/…/fd/N) → 12345; anything else → null. */
export function socketInode(link: string): number | null {
  const m = /^socket:\[(\d+)\]$/.exec(link);
  return m ? Number(m[1]) : null;
}

/** The real uid from /proc/<pid>/status (`Uid:\treal\teffective\tsaved\tfs`), or null. */
export function realUid(status: string): number | null {
  const m = /^Uid:\s+(\d+)\s/m.exec(status);
  return m ? Number(m[1]) : null;
}

/** True when a line of /proc/<pid>/cgroup (`<id>:<controllers>:<path>`) has a path ending in `/<unit>`. */
export function inUnitCgroup(cgroup: string, unit: string): boolean {
  return cgroup.split('\n').some((line) => {
    const path = line.split(':').slice(2).join(':');
    return path.endsWith(`/${unit}`);
  });
}
