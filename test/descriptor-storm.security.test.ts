import { afterEach, describe, expect, it, vi } from 'vitest';
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { createConnection, createServer } from 'node:net';
import type { Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildCli, REPO_ROOT } from './helpers/cli.js';
import { sleep } from './helpers/listener-load.js';

function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = createServer();
    s.listen(0, '127.0.0.1', () => {
      const addr = s.address();
      const port = typeof addr === 'object' && addr ? addr.port : 0;
      s.close(() => resolve(port));
    });
  });
}

const descriptorsOf = (pid: number): number => readdirSync(`/proc/${pid}/fd`).length;

async function healthy(url: string): Promise<boolean> {
  try {
    const r = await fetch(url, { signal: AbortSignal.timeout(2000) });
    return r.status === 200;
  } catch {
    return false;
  }
}

/** Opens `n` connections that never send a byte; resolves when each is connected or failed. */
async function openIdle(n: number, connect: () => Socket): Promise<Socket[]> {
  const sockets: Socket[] = [];
  const batch = 100;
  for (let i = 0; i < n; i += batch) {
    await Promise.all(
      Array.from({ length: Math.min(batch, n - i) }, () =>
        new Promise<void>((resolve) => {
          const s = connect();
          sockets.push(s);
          s.on('error', () => resolve());
          s.once('connect', () => resolve());
        }),
      ),
    );
  }
  return sockets;
}

/**
 * `mailsvc serve` under an open-file limit of 1024 (as systemd's default soft
 * limit): 700 idle connections to the policy port and 700 to the hook socket
 * would take every descriptor and the API with them. Each listener holds at
 * most its cap, so the API keeps answering.
 */
describe('descriptor storm against the policy port and the hook socket', () => {
  let child: ChildProcess | undefined;
  let dir = '';
  const clients: Socket[] = [];
  afterEach(() => {
    for (const c of clients.splice(0)) c.destroy();
    child?.kill('SIGKILL');
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it.skipIf(!existsSync('/usr/bin/prlimit'))('1400 idle connections: the listeners hold at most their caps, the API answers, one warning per listener', async () => {
    dir = mkdtempSync(join(tmpdir(), 'mailsvc-fd-'));
    const [api, policy] = [await freePort(), await freePort()];
    child = spawn('/usr/bin/prlimit', ['--nofile=1024:1024', process.execPath, buildCli(), 'serve'], {
      cwd: REPO_ROOT,
      env: { PATH: process.env.PATH ?? '', MAILSVC_DATA_DIR: dir, MAILSVC_API_PORT: String(api), MAILSVC_POLICY_LISTEN: `127.0.0.1:${policy}`, MAILSVC_ADMIN_PASSWORD: 'correct horse battery staple' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    child.stdout?.on('data', (d: Buffer) => (stdout += d.toString()));
    const health = `http://127.0.0.1:${api}/health`;
    await vi.waitFor(async () => expect(await healthy(health)).toBe(true), { timeout: 60_000, interval: 100 });
    const pid = child.pid ?? 0;
    const before = descriptorsOf(pid);

    const hookPath = join(dir, 'auth-hook.sock');
    clients.push(...(await openIdle(700, () => createConnection(policy, '127.0.0.1'))));
    clients.push(...(await openIdle(700, () => createConnection(hookPath))));
    // Deliberately fixed: the count must NOT exceed the caps; a slower machine accepts fewer in this
    // time, so the margin never turns a pass into a failure.
    await sleep(300);
    const during = descriptorsOf(pid);
    const answers: boolean[] = [];
    for (let i = 0; i < 5; i++) answers.push(await healthy(health));

    for (const c of clients.splice(0)) c.destroy();
    // The service closes its ends and logs the caps a moment later: wait for those states, not a fixed time.
    const limitWarnings = (): string[] => stdout.split('\n').filter((l) => l.includes('connection limit reached'));
    await vi.waitFor(() => {
      expect(descriptorsOf(pid) - before).toBeLessThan(10);
      expect(limitWarnings()).toHaveLength(2);
    }, { timeout: 30_000, interval: 100 }).catch(() => undefined);
    const after = descriptorsOf(pid);
    const warnings = limitWarnings();
    console.log(`[descriptors] mailsvc serve (limit 1024, caps 200 + 200): before ${before}, during 1400 idle connections ${during}, after ${after}; /health ${answers.filter(Boolean).length}/5 answered; ${warnings.length} limit warnings`);

    expect(answers).toEqual([true, true, true, true, true]);
    expect(during - before).toBeLessThanOrEqual(200 + 200 + 10);
    expect(after - before).toBeLessThan(10);
    expect(warnings).toHaveLength(2);
    expect(warnings.some((l) => l.includes('"listener":"policy service"'))).toBe(true);
    expect(warnings.some((l) => l.includes('"listener":"mail auth hook"'))).toBe(true);
  }, 180_000);
});
