import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';

/**
 * The unprivileged side of the privilege-boundary suite: ONE long-lived node
 * process run as another user (`setpriv --reuid … --clear-groups`). It reads
 * one JSON job per line on stdin ({tag, socket, payload, timeoutMs}), sends
 * each payload over its own fresh connection to the helper socket, and prints
 * {tag, kind, answer, ms} per job: `answer` (the first line back), `closed`,
 * `error` (could not connect) or `timeout`. Jobs run concurrently.
 */
const CLIENT = `import { createConnection } from 'node:net';
import { createInterface } from 'node:readline';
createInterface({ input: process.stdin }).on('line', (l) => {
  const { tag, socket, payload, timeoutMs } = JSON.parse(l);
  const start = Date.now();
  let buf = '';
  let done = false;
  const conn = createConnection(socket);
  const finish = (kind, answer) => {
    if (done) return;
    done = true;
    clearTimeout(timer);
    conn.destroy();
    process.stdout.write(JSON.stringify({ tag, kind, answer, ms: Date.now() - start }) + '\\n');
  };
  const timer = setTimeout(() => finish('timeout', buf), timeoutMs);
  conn.setEncoding('utf8');
  conn.on('data', (d) => { buf += d; const i = buf.indexOf('\\n'); if (i >= 0) finish('answer', buf.slice(0, i)); });
  conn.on('error', (e) => finish('error', String(e.code || e.message)));
  conn.on('close', () => finish('closed', buf));
  conn.write(payload);
}).on('close', () => process.exit(0));
`;

export type ClientReply = { kind: 'answer' | 'closed' | 'error' | 'timeout'; answer: string; ms: number };

export type BoundaryClient = {
  /** Sends `payload` (request lines) on a fresh connection to `socket`; resolves with what came back. */
  send(socket: string, payload: string, timeoutMs: number): Promise<ClientReply>;
  /** The user the client runs as, as it reported itself at start. */
  whoami: { uid: number; gid: number; groups: number[] };
  stop(): Promise<void>;
};

/** Writes the client into `dir` (readable by the user) and starts it as uid/gid `id` with no supplementary groups. */
export async function startBoundaryClient(dir: string, id: number): Promise<BoundaryClient> {
  const script = join(dir, 'boundary-client.mjs');
  writeFileSync(script, CLIENT, { mode: 0o644 });
  const probe = `process.stdout.write(JSON.stringify({uid:process.getuid(),gid:process.getgid(),groups:process.getgroups()})+'\\n');await import(${JSON.stringify(script)});`;
  const child: ChildProcess = spawn('setpriv', [`--reuid=${id}`, `--regid=${id}`, '--clear-groups', process.execPath, '--input-type=module', '-e', probe], {
    cwd: dir,
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin' },
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  const waiting = new Map<string, (r: ClientReply) => void>();
  let first: ((w: BoundaryClient['whoami']) => void) | undefined;
  const started = new Promise<BoundaryClient['whoami']>((resolve, reject) => {
    first = resolve;
    child.once('exit', (code) => reject(new Error(`the unprivileged client exited ${code} before it started`)));
  });
  createInterface({ input: child.stdout! }).on('line', (line) => {
    const msg = JSON.parse(line) as ClientReply & { tag?: string; uid?: number };
    if (first && msg.uid !== undefined) {
      first(msg as unknown as BoundaryClient['whoami']);
      first = undefined;
      return;
    }
    const resolve = waiting.get(msg.tag ?? '');
    waiting.delete(msg.tag ?? '');
    resolve?.({ kind: msg.kind, answer: msg.answer, ms: msg.ms });
  });
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  child.once('exit', () => {
    for (const resolve of waiting.values()) resolve({ kind: 'error', answer: 'the unprivileged client exited', ms: 0 });
    waiting.clear();
  });
  let next = 0;
  return {
    whoami: await started,
    send: (socket, payload, timeoutMs) =>
      new Promise((resolve) => {
        const tag = String(next++);
        waiting.set(tag, resolve);
        child.stdin!.write(`${JSON.stringify({ tag, socket, payload, timeoutMs })}\n`);
      }),
    stop: async () => {
      child.stdin!.end();
      const timer = setTimeout(() => child.kill('SIGKILL'), 5000);
      await exited;
      clearTimeout(timer);
    },
  };
}
