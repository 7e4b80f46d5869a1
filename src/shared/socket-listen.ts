import type { Server } from 'node:net';
import { chmodSync, chownSync, existsSync, unlinkSync } from 'node:fs';

/** A loopback TCP address, or a Unix socket given a group (null: the process's own). */
export type SocketAddress = { host: string; port: number } | { path: string; socketGroup: number | null };

/**
 * Binds `server` to a loopback port, or to a Unix socket (a stale one left by
 * a stopped process removed first) with mode 0660 and its group: only that
 * group's daemon (and root) may connect. Gives the path, or the port bound.
 */
export async function listenOn(server: Server, listen: SocketAddress): Promise<{ path: string | null; port: number }> {
  const path = 'path' in listen ? listen.path : null;
  if (path !== null && existsSync(path)) unlinkSync(path);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    if (path !== null) server.listen(path, () => resolve());
    else if ('port' in listen) server.listen(listen.port, listen.host, () => resolve());
  });
  if (path !== null && 'socketGroup' in listen) {
    if (listen.socketGroup !== null) chownSync(path, -1, listen.socketGroup);
    chmodSync(path, 0o660);
  }
  const addr = server.address();
  return { path, port: typeof addr === 'object' && addr ? addr.port : 0 };
}
