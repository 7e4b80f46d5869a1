import { createRequire } from 'node:module';
import { join } from 'node:path';
import { packageRoot } from '../config/layout.js';

/** What the kernel recorded for the process at the other end of a Unix socket when it connected (SO_PEERCRED). */
export type PeerCred = { pid: number; uid: number; gid: number };
export type PeerCredReader = (fd: number) => PeerCred;
export type PeerCredLoad = { ok: true; read: PeerCredReader } | { ok: false; reason: string };

/** The addon's place in the package (built by `npm ci` / `npm rebuild`, native/peercred/binding.gyp). */
export const PEERCRED_ADDON = join('native', 'peercred', 'build', 'Release', 'peercred.node');

const isCount = (v: unknown): v is number => typeof v === 'number' && Number.isSafeInteger(v) && v >= 0;

function checked(fn: (fd: number) => unknown): PeerCredReader {
  return (fd) => {
    const got = fn(fd) as Partial<Record<keyof PeerCred, unknown>> | null;
    if (typeof got !== 'object' || got === null || !isCount(got.pid) || !isCount(got.uid) || !isCount(got.gid)) {
      throw new Error('the SO_PEERCRED addon answered something other than {pid, uid, gid}');
    }
    return { pid: got.pid, uid: got.uid, gid: got.gid };
  };
}

/**
 * Loads the SO_PEERCRED addon from the package root. A path computed at run
 * time, through createRequire, so the bundler leaves the .node file where
 * `npm ci` built it. Never throws: a failure says what to do.
 */
export function loadPeerCred(root: string = packageRoot()): PeerCredLoad {
  const file = join(root, PEERCRED_ADDON);
  try {
    const addon = createRequire(join(root, 'package.json'))(file) as { peerCred?: unknown };
    const fn = addon.peerCred;
    if (typeof fn !== 'function') return { ok: false, reason: `${file} exports no peerCred function` };
    return { ok: true, read: checked(fn as (fd: number) => unknown) };
  } catch (err) {
    const why = err instanceof Error ? err.message.split('\n')[0] : String(err);
    return { ok: false, reason: `the SO_PEERCRED addon ${file} cannot be loaded (${why}): rebuild it with \`npm rebuild\` in ${root}, or reinstall mailsvc` };
  }
}

let loaded: PeerCredLoad | undefined;

/** The package's addon, loaded once per process. */
export function peerCredAddon(): PeerCredLoad {
  loaded ??= loadPeerCred();
  return loaded;
}
