import { spawn, spawnSync } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { REPO_ROOT, wrappedCli } from './cli.js';

/**
 * A client of the helper's socket that runs as an unprivileged user (`nobody`,
 * through setpriv with no supplementary groups): what a compromised `mailsvc`
 * user can do. Start the helper with MAILSVC_HELPER_SOCKET_GROUP=65534 and its
 * directory 0755 so this user may connect.
 */
export const NOBODY = 65534;

/** Why this cannot run here (not root, no setpriv), or null. */
export function unprivilegedUnavailable(): string | null {
  if (process.getuid?.() !== 0) return 'not root (setpriv needs it to become nobody)';
  if (spawnSync('setpriv', ['--version'], { stdio: 'ignore', timeout: 30_000 }).status !== 0) return 'setpriv (util-linux) is not installed';
  return null;
}

/** Runs `file args…` as nobody and waits for it. */
export function runAsNobody(file: string, args: string[]): { status: number | null; stdout: string; stderr: string } {
  const r = spawnSync('setpriv', [`--reuid=${NOBODY}`, `--regid=${NOBODY}`, '--clear-groups', file, ...args], { encoding: 'utf8', timeout: 60_000 });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

/** Reads request lines on stdin, sends them on one connection, prints `{answers, closed, timedOut}` as JSON. */
const CLIENT = `
const net = require('net');
const [sock, ms, want] = process.argv.slice(1);
let input = '';
process.stdin.setEncoding('utf8').on('data', (d) => (input += d)).on('end', () => {
  const conn = net.createConnection(sock);
  let buf = '';
  let over = false;
  const finish = (closed, timedOut) => {
    if (over) return;
    over = true;
    process.stdout.write(JSON.stringify({ answers: buf.split('\\n').filter(Boolean).map((l) => JSON.parse(l)), closed, timedOut }));
    process.exit(0);
  };
  setTimeout(() => finish(false, true), Number(ms));
  conn.setEncoding('utf8');
  conn.on('error', () => finish(true, false));
  conn.on('data', (d) => { buf += d; if (buf.split('\\n').filter(Boolean).length >= Number(want)) finish(false, false); });
  conn.on('close', () => finish(true, false));
  conn.write(input);
});
`;

export type NobodyExchange = { answers: Record<string, unknown>[]; closed: boolean; timedOut: boolean };

/**
 * Sends these request lines as nobody on one connection and collects up to
 * `want` answers (default: one per line) within `timeoutMs`. `child` lets a
 * test stop a client it no longer waits for.
 */
export function askAsNobody(socket: string, lines: string[], opts: { timeoutMs?: number; want?: number } = {}): { child: ChildProcess; done: Promise<NobodyExchange> } {
  const timeoutMs = opts.timeoutMs ?? 20_000;
  const child = spawn('setpriv', [`--reuid=${NOBODY}`, `--regid=${NOBODY}`, '--clear-groups', process.execPath, '-e', CLIENT, socket, String(timeoutMs), String(opts.want ?? lines.length)], {
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stdout.setEncoding('utf8').on('data', (d: string) => (out += d));
  child.stderr.setEncoding('utf8').on('data', (d: string) => (err += d));
  const done = new Promise<NobodyExchange>((resolve, reject) => {
    child.on('error', reject);
    child.on('close', () => {
      try {
        resolve(JSON.parse(out) as NobodyExchange);
      } catch {
        reject(new Error(`the unprivileged client printed no answer: ${out}${err}`));
      }
    });
  });
  child.stdin.end(lines.join(''));
  return { child, done };
}

/** The installed command run as nobody (`node <checkout>/dist/bundle/mailsvc.js args…`), from any checkout (wrappedCli). */
export function runCliAsNobody(
  args: string[],
  opts: { env: Record<string, string>; timeoutMs?: number },
): { status: number | null; stdout: string; stderr: string; error?: Error } {
  const [file, ...argv] = wrappedCli(['setpriv', `--reuid=${NOBODY}`, `--regid=${NOBODY}`, '--clear-groups'], args);
  const r = spawnSync(file as string, argv, { cwd: REPO_ROOT, env: opts.env, encoding: 'utf8', timeout: opts.timeoutMs ?? 90_000 });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr, ...(r.error ? { error: r.error } : {}) };
}
