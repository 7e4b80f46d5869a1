import { spawn, spawnSync } from 'node:child_process';
import { chmodSync, copyFileSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { REPO_ROOT } from './cli.js';

/** A cgroup this process is in, by the last component of its path (/proc/self/cgroup), or null. */
export function ownCgroupLeaf(): string | null {
  for (const line of readFileSync('/proc/self/cgroup', 'utf8').split('\n')) {
    const leaf = line.split(':').slice(2).join(':').split('/').at(-1) ?? '';
    if (/^[A-Za-z0-9:_.@-]{1,255}$/.test(leaf)) return leaf;
  }
  return null;
}

export type PeerEvent = { c: number; ev: 'connect' | 'line' | 'close' | 'error'; line?: string; code?: string; at: number };
export type ConnSpec = { send?: string; every?: number; times?: number };

export type PeerClient = {
  /** The client's pid, as it reported it (unshare -rn makes no pid namespace: the same as seen from outside). */
  pid(): number | undefined;
  events(): PeerEvent[];
  /** The events of connection `c`. */
  of(c: number): PeerEvent[];
  /** The answer lines received, parsed. */
  answers(c?: number): Record<string, unknown>[];
  stop(): Promise<void>;
};

/**
 * The client script where any user can read it: a checkout nobody may enter (a clone under /root, 0700) would
 * make node, run as another user, answer "Cannot find module". Copied once per test process.
 */
export function peerClientScript(): string {
  if (clientCopy === undefined) {
    const dir = mkdtempSync(join(tmpdir(), 'mailsvc-peer-client-'));
    chmodSync(dir, 0o755);
    clientCopy = join(dir, 'helper-peer-client.mjs');
    copyFileSync(join(REPO_ROOT, 'test/helpers/helper-peer-client.mjs'), clientCopy);
    chmodSync(clientCopy, 0o644);
  }
  return clientCopy;
}
let clientCopy: string | undefined;

/**
 * Why an unprivileged user cannot make a user and network namespace of its
 * own here (`unshare -rn` as nobody), or null when it can.
 */
export function ownNamespacesUnavailable(): string | null {
  const r = spawnSync('setpriv', ['--reuid=65534', '--regid=65534', '--clear-groups', 'unshare', '-rn', 'true'], { stdio: 'ignore', timeout: 30_000 });
  return r.status === 0 ? null : 'nobody cannot run unshare -rn (util-linux, unprivileged user namespaces)';
}

export type PeerClientOptions = {
  /** Run the client in a user and network namespace of its own (`unshare -rn`, which any user may do). */
  ownNamespaces?: boolean;
};

/**
 * test/helpers/helper-peer-client.mjs as `uid` (group `gid`, no other groups,
 * via setpriv): opens the plan's connections one after the other and reports
 * what happens to each. setpriv and unshare exec, so the client's pid is the child's.
 */
export function startPeerClient(socket: string, uid: number, gid: number, plan: ConnSpec[], opts: PeerClientOptions = {}): PeerClient {
  const env = { PATH: process.env.PATH ?? '/usr/bin:/bin', LANG: 'C' };
  const namespaces = opts.ownNamespaces ? ['unshare', '-rn'] : [];
  const client = [process.execPath, peerClientScript(), socket, JSON.stringify(plan)];
  const child = spawn('setpriv', [`--reuid=${uid}`, `--regid=${gid}`, '--clear-groups', ...namespaces, ...client], {
    env,
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  const events: PeerEvent[] = [];
  let pid: number | undefined;
  let buf = '';
  child.stdout.setEncoding('utf8').on('data', (d: string) => {
    buf += d;
    let nl: number;
    while ((nl = buf.indexOf('\n')) >= 0) {
      const e = JSON.parse(buf.slice(0, nl)) as PeerEvent & { pid?: number };
      buf = buf.slice(nl + 1);
      if (e.pid !== undefined) pid = e.pid;
      else events.push({ ...e, at: Date.now() });
    }
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  return {
    pid: () => pid,
    events: () => events,
    of: (c) => events.filter((e) => e.c === c),
    answers: (c) => events.filter((e) => e.ev === 'line' && (c === undefined || e.c === c)).map((e) => JSON.parse(e.line ?? '') as Record<string, unknown>),
    stop: async () => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      await exited;
    },
  };
}
