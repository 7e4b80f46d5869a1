import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export type RcloneServer = { port: number; root: string; user: string; password: string; obscured: string; stop(): Promise<void> };

/**
 * `rclone serve sftp|webdav` on 127.0.0.1 with a port the kernel picks (read
 * from its log line), serving a fresh temp directory, with a user and password.
 * Its host keys go to its own temp cache, not the user's. `serve sftp`
 * generates those keys at start, which takes seconds on a busy 2-core machine:
 * its log line is awaited for up to START_LIMIT_MS (callers start it inside a
 * test with a limit of minutes, so the hook/test limit is not what ends it).
 */
const START_LIMIT_MS = 120_000;

/** Why rclone cannot serve here (null: it can). */
export function rcloneUnavailable(): string | null {
  try {
    execFileSync('rclone', ['version'], { stdio: 'ignore' });
    return null;
  } catch {
    return 'rclone missing (apt-get install rclone)';
  }
}

export async function startRcloneServer(kind: 'sftp' | 'webdav'): Promise<RcloneServer> {
  const root = mkdtempSync(join(tmpdir(), `mailsvc-remote-${kind}-`));
  const home = mkdtempSync(join(tmpdir(), 'mailsvc-rclone-home-'));
  const user = 'backup';
  const password = `pw-${Math.random().toString(36).slice(2)}`;
  const env = { PATH: process.env.PATH ?? '', HOME: home, XDG_CACHE_HOME: home, RCLONE_CONFIG: join(home, 'none.conf') };
  const child: ChildProcess = spawn('rclone', ['serve', kind, root, '--addr', '127.0.0.1:0', '--user', user, '--pass', password, '-v'], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  const port = await new Promise<number>((resolve, reject) => {
    let log = '';
    const timer = setTimeout(() => reject(new Error(`rclone serve ${kind} did not start within ${START_LIMIT_MS} ms: ${log}`)), START_LIMIT_MS);
    const onData = (d: Buffer): void => {
      log += d.toString();
      const m = /listening on 127\.0\.0\.1:(\d+)|started on http:\/\/127\.0\.0\.1:(\d+)/.exec(log);
      if (m) {
        clearTimeout(timer);
        resolve(Number(m[1] ?? m[2]));
      }
    };
    child.stdout?.on('data', onData);
    child.stderr?.on('data', onData);
    child.on('exit', () => reject(new Error(`rclone serve ${kind} exited: ${log}`)));
    child.on('error', (e) => {
      clearTimeout(timer);
      reject(e);
    });
  });
  const obscured = execFileSync('rclone', ['obscure', '-'], { input: password, env }).toString().trim();
  return {
    port,
    root,
    user,
    password,
    obscured,
    stop: async () => {
      const done = new Promise((r) => child.once('exit', r));
      child.kill('SIGTERM');
      await done;
      rmSync(root, { recursive: true, force: true });
      rmSync(home, { recursive: true, force: true });
    },
  };
}
