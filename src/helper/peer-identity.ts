import { readFile } from 'node:fs/promises';
import type { Socket } from 'node:net';
import { peerCredAddon } from './peer-cred.js';
import type { PeerCredLoad } from './peer-cred.js';

/**
 * Who holds the other end of a connection to the helper: root, the service's
 * own process (a process in the cgroup of MAILSVC_HELPER_SERVICE_UNIT), another
 * user, or unknown (the SO_PEERCRED addon is missing, or the kernel refused).
 */
export type Peer =
  | { kind: 'root' | 'service' | 'user'; pid: number; uid: number }
  | { kind: 'unknown'; reason: string };

export type IdentifyOptions = {
  /** The systemd unit whose cgroup holds the service's own process (`mailsvc.service`). */
  serviceUnit: string;
  /** The SO_PEERCRED reader (default: the package's addon, loaded once). */
  addon?: PeerCredLoad;
  /** Where /proc is (tests). */
  proc?: string;
};

const unknown = (reason: string): Peer => ({ kind: 'unknown', reason });

/** The accepted socket's file descriptor in this process (net.Socket keeps it on its handle). */
function socketFd(socket: Socket): number | null {
  const fd = (socket as unknown as { _handle?: { fd?: unknown } })._handle?.fd;
  return typeof fd === 'number' && fd >= 0 ? fd : null;
}

/** True when a line of /proc/<pid>/cgroup (`<id>:<controllers>:<path>`) has a path ending in `/<unit>`. */
export function inUnitCgroup(cgroup: string, unit: string): boolean {
  return cgroup.split('\n').some((line) => {
    const path = line.split(':').slice(2).join(':');
    return path.endsWith(`/${unit}`);
  });
}

async function readOrNull(path: string): Promise<string | null> {
  try {
    return await readFile(path, 'utf8');
  } catch {
    return null;
  }
}

/**
 * Finds the peer of `socket` (a connection the helper accepted) with
 * getsockopt(SO_PEERCRED): the pid, uid and gid the kernel recorded when the
 * peer called connect(), translated into the helper's namespaces (so a client
 * in another network or user namespace is its real uid, and a uid with no
 * mapping is the overflow uid 65534, never root).
 *
 * The uid decides root (0) or not, and is the kernel's: nothing a client
 * chooses. The pid only decides service or user, through /proc/<pid>/cgroup,
 * and is read after the fact, so it may name another process: one that took
 * the pid after the peer exited. That can only make a peer of the service's
 * uid look like the service if the pid went to a process of mailsvc.service
 * between the peer's connect() and this read (a window of one accept and one
 * lookup, and the whole pid space to go through first); the gain is the 4
 * reserved slots, never root. A pid gone, hidden (0: another pid namespace)
 * or unreadable counts as a user.
 */
export async function identifyPeer(socket: Socket, opts: IdentifyOptions): Promise<Peer> {
  const addon = opts.addon ?? peerCredAddon();
  if (!addon.ok) return unknown(addon.reason);
  const fd = socketFd(socket);
  if (fd === null) return unknown('the connection has no file descriptor');
  let cred;
  try {
    cred = addon.read(fd);
  } catch (err) {
    return unknown(err instanceof Error ? err.message : String(err));
  }
  if (cred.uid === 0) return { kind: 'root', pid: cred.pid, uid: 0 };
  const cgroup = cred.pid > 0 ? await readOrNull(`${opts.proc ?? '/proc'}/${cred.pid}/cgroup`) : null;
  const service = cgroup !== null && inUnitCgroup(cgroup, opts.serviceUnit);
  return { kind: service ? 'service' : 'user', pid: cred.pid, uid: cred.uid };
}
