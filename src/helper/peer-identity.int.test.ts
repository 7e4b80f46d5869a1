import { spawn, spawnSync } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { createConnection, createServer } from 'node:net';
import type { Server, Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ownCgroupLeaf, peerClientScript } from '../../test/helpers/helper-peers.js';
import { skipNotice } from '../../test/helpers/services.js';
import { identifyPeer } from './peer-identity.js';
import type { Peer } from './peer-identity.js';

const NOBODY = 65534;
const has = (cmd: string, args: string[]): boolean => spawnSync(cmd, args, { stdio: 'ignore', timeout: 30_000 }).status === 0;
const canRun = process.getuid?.() === 0 && has('ss', ['-V']) && has('setpriv', ['--version']);
if (!canRun) skipNotice('root, ss (iproute2) and setpriv', 'needed to identify a peer of another user');

// identifyPeer against a real socket: this process (root) and a child run as nobody connect to it.
describe.skipIf(!canRun)('identifyPeer: who holds the other end, through ss and /proc', () => {
  let dir: string;
  let path: string;
  let server: Server;
  const accepted: Socket[] = [];
  const waiters: ((s: Socket) => void)[] = [];
  const nextAccepted = (): Promise<Socket> => new Promise((resolve) => waiters.push(resolve));

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
  afterAll(async () => {
    accepted.forEach((s) => s.destroy());
    await new Promise<void>((resolve) => server.close(() => resolve()));
    rmSync(dir, { recursive: true, force: true });
  });

  const asNobody = async (): Promise<{ child: ChildProcess; socket: Socket }> => {
    const got = nextAccepted();
    const plan = JSON.stringify([{}]);
    const child = spawn('setpriv', [`--reuid=${NOBODY}`, `--regid=${NOBODY}`, '--clear-groups', process.execPath, peerClientScript(), path, plan], { env: { PATH: process.env.PATH ?? '/usr/bin:/bin' }, stdio: ['pipe', 'pipe', 'inherit'] });
    return { child, socket: await got };
  };

  it('this process is root, with its own pid', async () => {
    const got = nextAccepted();
    const client = createConnection(path);
    const peer = await identifyPeer(await got, { socketPath: path, serviceUnit: 'mailsvc.service' });
    client.destroy();
    expect(peer).toEqual({ kind: 'root', pid: process.pid, uid: 0 });
  });

  it('a process run as nobody is a user with its uid and pid, found with and without the path filter', async () => {
    const { child, socket } = await asNobody();
    try {
      for (const socketPath of [path, null]) {
        const peer = await identifyPeer(socket, { socketPath, serviceUnit: 'mailsvc.service' });
        expect(peer).toEqual({ kind: 'user', pid: child.pid, uid: NOBODY });
      }
    } finally {
      child.kill();
    }
  });

  it('a process in the cgroup of the service unit is the service', async (ctx) => {
    const leaf = ownCgroupLeaf();
    if (leaf === null) {
      skipNotice('a named cgroup of this process', '/proc/self/cgroup lists none');
      ctx.skip();
      return;
    }
    const { child, socket } = await asNobody();
    try {
      expect(await identifyPeer(socket, { socketPath: path, serviceUnit: leaf })).toEqual({ kind: 'service', pid: child.pid, uid: NOBODY });
    } finally {
      child.kill();
    }
  });

  it('without ss, or when the peer is gone, the peer is unknown', async () => {
    const { child, socket } = await asNobody();
    let peer: Peer;
    try {
      peer = await identifyPeer(socket, { socketPath: path, serviceUnit: 'mailsvc.service', ss: join(dir, 'no-ss') });
      expect(peer.kind).toBe('unknown');
    } finally {
      child.kill();
    }
    await new Promise((r) => child.once('exit', r));
    peer = await identifyPeer(socket, { socketPath: path, serviceUnit: 'mailsvc.service' });
    expect(peer.kind).toBe('unknown');
  });
});
