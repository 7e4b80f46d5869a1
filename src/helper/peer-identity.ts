import { readFile, readlink } from 'node:fs/promises';
import type { Socket } from 'node:net';
import { exec } from '../adapters/exec.js';
import { holderCandidates, inUnitCgroup, realUid, serverPeerInodes, socketInode } from './peer-ss.js';

/**
 * Who holds the other end of a connection to the helper: root, the service's
 * own process (a process in the cgroup of MAILSVC_HELPER_SERVICE_UNIT), another
 * user, or unknown (ss missing or failing, or the peer already gone).
 */
export type Peer =
  | { kind: 'root' | 'service' | 'user'; pid: number; uid: number }
  | { kind: 'unknown'; reason: string };

export type IdentifyOptions = {
  /** The helper socket's path: `ss` lists only sockets of that name. Null: ss lists all sockets. */
  socketPath: string | null;
  /** The systemd unit whose cgroup holds the service's own process (`mailsvc.service`). */
  serviceUnit: string;
  /** The ss program (default `ss`, from iproute2). */
  ss?: string;
  timeoutMs?: number;
};

const unknown = (reason: string): Peer => ({ kind: 'unknown', reason });

/** The accepted socket's file descriptor in this process (net.Socket keeps it on its handle). */
function socketFd(socket: Socket): number | null {
  const fd = (socket as unknown as { _handle?: { fd?: unknown } })._handle?.fd;
  return typeof fd === 'number' && fd >= 0 ? fd : null;
}

async function readOrNull(path: string): Promise<string | null> {
  try {
    return await readFile(path, 'utf8');
  } catch {
    return null;
  }
}

async function holdsSocket(pid: number, fd: number, inode: number): Promise<boolean> {
  try {
    return socketInode(await readlink(`/proc/${pid}/fd/${fd}`)) === inode;
  } catch {
    return false;
  }
}

/**
 * Finds the peer of `socket` (a connection the helper accepted): its inode
 * from /proc/self/fd, the peer's inode from `ss -xnH src <path>`, the processes
 * holding the peer's socket from `ss -xpnH`, each checked in /proc. Several
 * holders (a socket shared after fork) count as the least privileged of them.
 */
export async function identifyPeer(socket: Socket, opts: IdentifyOptions): Promise<Peer> {
  const fd = socketFd(socket);
  if (fd === null) return unknown('the connection has no file descriptor');
  let own: number | null;
  try {
    own = socketInode(await readlink(`/proc/self/fd/${fd}`));
  } catch {
    own = null;
  }
  if (own === null) return unknown('the connection is not a socket in /proc/self/fd');
  const ss = opts.ss ?? 'ss';
  const run = { timeoutMs: opts.timeoutMs ?? 5000, maxOutputBytes: 4 * 1024 * 1024 };
  let peerInode: number | undefined;
  let listing: string;
  try {
    const ours = await exec(ss, ['-xnH', ...(opts.socketPath === null ? [] : ['src', opts.socketPath])], run);
    peerInode = serverPeerInodes(ours.stdout).get(own);
    if (peerInode === undefined) return unknown('ss does not list the connection');
    listing = (await exec(ss, ['-xpnH'], run)).stdout;
  } catch (err) {
    return unknown(err instanceof Error ? err.message : String(err));
  }
  const candidates = holderCandidates(listing, peerInode);
  if (candidates === null) return unknown('ss lists too many holders for the peer socket');
  const holders: { pid: number; uid: number; service: boolean }[] = [];
  for (const c of candidates) {
    if (!(await holdsSocket(c.pid, c.fd, peerInode))) continue;
    const uid = realUid((await readOrNull(`/proc/${c.pid}/status`)) ?? '');
    const cgroup = await readOrNull(`/proc/${c.pid}/cgroup`);
    if (uid === null || cgroup === null) continue;
    holders.push({ pid: c.pid, uid, service: inUnitCgroup(cgroup, opts.serviceUnit) });
  }
  if (holders.length === 0) return unknown('no process holds the peer socket (it may have gone)');
  holders.sort((a, b) => a.pid - b.pid);
  const user = holders.find((h) => h.uid !== 0 && !h.service);
  if (user) return { kind: 'user', pid: user.pid, uid: user.uid };
  const service = holders.find((h) => h.uid !== 0);
  if (service) return { kind: 'service', pid: service.pid, uid: service.uid };
  const root = holders[0] as { pid: number; uid: number };
  return { kind: 'root', pid: root.pid, uid: 0 };
}
