import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { chmodSync, chownSync, existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { createConnection } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildCli } from './cli.js';

/**
 * `mailsvc helper serve` as its own process, from the built CLI, on a socket
 * in a temp dir. Fake `doveadm`, `postfix`, `fail2ban-client` and `systemctl`
 * scripts come first on its PATH: each appends its name and argv to `ran`, so a
 * test can prove what ran, and what did not.
 */
export type HelperProcess = {
  dir: string;
  socket: string;
  /** The process id of what was started (the wrapper's when `wrap` execs into the helper, as `unshare` does). */
  pid: number | undefined;
  /** Lines `<program> <args…>` the fake programs wrote; empty when nothing ran. */
  ran(): string[];
  /** The helper's JSON log lines so far. */
  logs(): Record<string, unknown>[];
  alive(): boolean;
  stop(): Promise<void>;
};

const FAKES = ['doveadm', 'postfix', 'fail2ban-client', 'systemctl'];

export function fakeBin(dir: string): string {
  const bin = join(dir, 'bin');
  mkdirSync(bin, { recursive: true });
  for (const name of FAKES) {
    const file = join(bin, name);
    writeFileSync(file, `#!/bin/sh\necho "${name} $*" >> "${join(dir, 'ran')}"\necho "${name} ok"\nexit 0\n`);
    chmodSync(file, 0o755);
  }
  return bin;
}

export async function waitForSocket(path: string, timeoutMs = 15_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (Date.now() < end) {
    if (existsSync(path)) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`no socket at ${path} after ${timeoutMs} ms`);
}

/** Starts the helper; `wrap` puts a launcher (systemd-socket-activate …) in front of `node bin.js helper serve`. */
export async function startHelperProcess(
  opts: {
    env?: Record<string, string>;
    settingsFile?: string;
    wrap?: (socket: string, env: Record<string, string>) => string[];
    /** false: the real daemon programs, not the recording fakes. */
    fakes?: boolean;
  } = {},
): Promise<HelperProcess> {
  const dir = mkdtempSync(join(tmpdir(), 'mailsvc-helper-'));
  const socket = join(dir, 'helper.sock');
  // The service's settings file, in its data directory (which the service can write).
  // Run as root, the file is made another user's (nobody's), as the service user's would be: written by root in
  // root's directory, it is a file only root can change, which a root process may trust (trusted-file.ts).
  if (opts.settingsFile !== undefined) {
    const file = join(dir, 'mailsvc.conf');
    writeFileSync(file, opts.settingsFile);
    if (process.getuid?.() === 0) chownSync(file, 65534, 65534);
  }
  const env: Record<string, string> = {
    PATH: opts.fakes === false ? (process.env.PATH ?? '/usr/sbin:/usr/bin:/sbin:/bin') : `${fakeBin(dir)}:${process.env.PATH ?? '/usr/bin:/bin'}`,
    MAILSVC_DATA_DIR: dir,
    MAILSVC_HELPER: `unix:${socket}`,
    MAILSVC_LOG_LEVEL: 'info',
    ...opts.env,
  };
  const argv = [process.execPath, buildCli(), 'helper', 'serve'];
  const cmd = opts.wrap ? [...opts.wrap(socket, env), ...argv] : argv;
  const child: ChildProcess = spawn(cmd[0] as string, cmd.slice(1), { env, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stdout?.setEncoding('utf8').on('data', (d: string) => (out += d));
  child.stderr?.setEncoding('utf8').on('data', (d: string) => (err += d));
  try {
    await waitForSocket(socket);
  } catch (e) {
    child.kill('SIGKILL');
    throw new Error(`${e instanceof Error ? e.message : String(e)}; helper said: ${out}${err}`);
  }
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  return {
    dir,
    socket,
    pid: child.pid,
    ran: () => (existsSync(join(dir, 'ran')) ? readFileSync(join(dir, 'ran'), 'utf8').trimEnd().split('\n') : []),
    logs: () =>
      out
        .split('\n')
        .filter((l) => l.startsWith('{'))
        .map((l) => JSON.parse(l) as Record<string, unknown>),
    alive: () => child.exitCode === null && child.signalCode === null,
    stop: async () => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      await exited;
    },
  };
}

/** Sends raw bytes on one connection and collects what comes back until the helper closes it or `lines` answers arrived. */
export function exchange(socket: string, payload: string | Buffer, lines: number, timeoutMs = 10_000): Promise<{ answers: Record<string, unknown>[]; closed: boolean }> {
  return new Promise((resolve, reject) => {
    const conn = createConnection(socket);
    let buf = '';
    const timer = setTimeout(() => {
      conn.destroy();
      reject(new Error(`no ${lines} answers within ${timeoutMs} ms; got: ${buf}`));
    }, timeoutMs);
    const done = (closed: boolean): void => {
      clearTimeout(timer);
      conn.destroy();
      resolve({ answers: buf.split('\n').filter(Boolean).map((l) => JSON.parse(l) as Record<string, unknown>), closed });
    };
    conn.on('error', () => undefined);
    conn.setEncoding('utf8');
    conn.on('data', (d: string) => {
      buf += d;
      if (buf.split('\n').filter(Boolean).length >= lines) done(false);
    });
    conn.on('close', () => done(true));
    conn.write(payload);
  });
}

export const request = (id: number | string, action: string, args: string[]): string => `${JSON.stringify({ id, action, args })}\n`;
