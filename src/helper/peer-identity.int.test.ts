import { spawnSync } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { createConnection, createServer } from 'node:net';
import type { Server, Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { ownCgroupLeaf, ownNamespacesUnavailable, startPeerClient } from '../../test/helpers/helper-peers.js';
import type { PeerClient } from '../../test/helpers/helper-peers.js';
import { startSleepers } from '../../test/helpers/many-processes.js';
import type { Sleepers } from '../../test/helpers/many-processes.js';
import { skipNotice } from '../../test/helpers/services.js';
import { loadPeerCred } from './peer-cred.js';
import { identifyPeer } from './peer-identity.js';

const NOBODY = 65534;
const canRun = process.getuid?.() === 0 && spawnSync('setpriv', ['--version'], { stdio: 'ignore', timeout: 30_000 }).status === 0;
if (!canRun) skipNotice('root and setpriv', 'needed to identify a peer of another user');
const noNamespaces = canRun ? ownNamespacesUnavailable() : 'not root';
if (canRun && noNamespaces !== null) skipNotice('unshare -rn as nobody', noNamespaces);

// identifyPeer against a real socket: this process (root) and children run as nobody connect to it.
describe.skipIf(!canRun)('identifyPeer: who holds the other end, through SO_PEERCRED', { timeout: 60_000 }, () => {
  let dir: string;
  let path: string;
  let server: Server;
  const accepted: Socket[] = [];
  const clients: PeerClient[] = [];
  const waiters: ((s: Socket) => void)[] = [];
  const nextAccepted = (): Promise<Socket> => new Promise((resolve) => waiters.push(resolve));
  const opts = { serviceUnit: 'mailsvc.service' };

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'mailsvc-peer-'));
    chmodSync(dir, 0o755);
    path = join(dir, 'peer.sock');
    server = createServer({ pauseOnConnect: true }, (s) => {
      accepted.push(s);
      waiters.shift()?.(s);
    });
    await new Promise<void>((resolve) => server.listen(path, resolve));
    chmodSync(path, 0o666);
  });
  afterEach(async () => {
    await Promise.all(clients.splice(0).map((c) => c.stop()));
  });
  afterAll(async () => {
    accepted.forEach((s) => s.destroy());
    await new Promise<void>((resolve) => server.close(() => resolve()));
    rmSync(dir, { recursive: true, force: true });
  });

  /** One connection from a client run as nobody; its accepted socket here and the client's pid. */
  const asNobody = async (ownNamespaces = false): Promise<{ client: PeerClient; socket: Socket; pid: number }> => {
    const got = nextAccepted();
    const client = startPeerClient(path, NOBODY, NOBODY, [{}], { ownNamespaces });
    clients.push(client);
    const socket = await got;
    await vi.waitFor(() => expect(client.pid()).toBeTypeOf('number'), { timeout: 30_000 });
    return { client, socket, pid: client.pid() ?? -1 };
  };

  it('this process is root, with its own pid', async () => {
    const got = nextAccepted();
    const client = createConnection(path);
    const peer = await identifyPeer(await got, opts);
    client.destroy();
    expect(peer).toEqual({ kind: 'root', pid: process.pid, uid: 0 });
  });

  it('a process run as nobody is a user with its uid and pid', async () => {
    const { socket, pid } = await asNobody();
    expect(await identifyPeer(socket, opts)).toEqual({ kind: 'user', pid, uid: NOBODY });
  });

  it.skipIf(noNamespaces !== null)('a process of nobody in a user and network namespace of its own (unshare -rn) is still user 65534, not root nor unknown', async () => {
    // Inside, it is root (uid 0) in a network namespace where the helper's sock_diag (ss) never saw it: before, "unknown".
    const { socket, pid } = await asNobody(true);
    expect(await identifyPeer(socket, opts)).toEqual({ kind: 'user', pid, uid: NOBODY });
  });

  it('a process in the cgroup of the service unit is the service', async (ctx) => {
    const leaf = ownCgroupLeaf();
    if (leaf === null) {
      skipNotice('a named cgroup of this process', '/proc/self/cgroup lists none');
      ctx.skip();
      return;
    }
    const { socket, pid } = await asNobody();
    expect(await identifyPeer(socket, { serviceUnit: leaf })).toEqual({ kind: 'service', pid, uid: NOBODY });
  });

  it('a peer that has gone keeps the uid the kernel recorded at connect, and is never the service', async () => {
    const leaf = ownCgroupLeaf() ?? 'mailsvc.service';
    const { client, socket, pid } = await asNobody();
    await client.stop();
    expect(await identifyPeer(socket, { serviceUnit: leaf })).toEqual({ kind: 'user', pid, uid: NOBODY });
  });

  it('without the addon every peer is unknown, and the reason says to rebuild it', async () => {
    const addon = loadPeerCred(join(dir, 'no-package'));
    expect(addon).toMatchObject({ ok: false, reason: expect.stringContaining('npm rebuild') });
    const got = nextAccepted();
    const client = createConnection(path);
    const peer = await identifyPeer(await got, { ...opts, addon });
    client.destroy();
    expect(peer).toMatchObject({ kind: 'unknown', reason: expect.stringContaining('peercred.node') });
  });

  describe('with 2,000 more processes on the machine', () => {
    let sleepers: Sleepers | undefined;
    beforeAll(async () => {
      sleepers = await startSleepers(2000);
    }, 120_000);
    afterAll(async () => {
      await sleepers?.stop();
    });

    it('still tells root, a user and a namespaced user apart (nothing walks /proc)', async () => {
      const got = nextAccepted();
      const rootClient = createConnection(path);
      expect(await identifyPeer(await got, opts)).toEqual({ kind: 'root', pid: process.pid, uid: 0 });
      rootClient.destroy();
      const user = await asNobody();
      expect(await identifyPeer(user.socket, opts)).toEqual({ kind: 'user', pid: user.pid, uid: NOBODY });
      if (noNamespaces === null) {
        const inNs = await asNobody(true);
        expect(await identifyPeer(inNs.socket, opts)).toEqual({ kind: 'user', pid: inNs.pid, uid: NOBODY });
      }
    });
  });
});
