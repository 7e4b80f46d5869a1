import { afterEach, describe, expect, it } from 'vitest';
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { createServer, createConnection } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildCli, REPO_ROOT } from '../../test/helpers/cli.js';

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

async function until<T>(fn: () => Promise<T | undefined>, ms = 60_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await fn().catch(() => undefined);
    if (v !== undefined) return v;
    if (Date.now() > end) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 100));
  }
}

describe('mailsvc serve (what npm start runs)', { timeout: 120_000 }, () => {
  let child: ChildProcess | undefined;
  let dir = '';
  afterEach(() => {
    child?.kill('SIGKILL');
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it("serves the API, the auth hook socket, the policy service and Postfix's lookup tables on the embedded default, and stops on SIGTERM", async () => {
    dir = mkdtempSync(join(tmpdir(), 'mailsvc-serve-'));
    const [api, policy] = [await freePort(), await freePort()];
    child = spawn(process.execPath, [buildCli(), 'serve'], {
      cwd: REPO_ROOT,
      env: { PATH: process.env.PATH ?? '', MAILSVC_DATA_DIR: dir, MAILSVC_API_PORT: String(api), MAILSVC_POLICY_LISTEN: `127.0.0.1:${policy}`, MAILSVC_MAPS_LISTEN: `unix:${join(dir, 'maps')}`, MAILSVC_ADMIN_PASSWORD: 'correct horse battery staple' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stderr = '';
    child.stderr?.on('data', (d: Buffer) => (stderr += d.toString()));
    const health = await until(async () => {
      const r = await fetch(`http://127.0.0.1:${api}/health`);
      return r.ok ? ((await r.json()) as unknown) : undefined;
    });
    expect(health).toEqual({ status: 'ok' });
    expect(existsSync(join(dir, 'mailsvc.db'))).toBe(true);
    expect(existsSync(join(dir, 'secret.key'))).toBe(true);
    expect(existsSync(join(dir, 'auth-hook.sock'))).toBe(true);
    const answer = await new Promise<string>((resolve, reject) => {
      const c = createConnection(policy, '127.0.0.1');
      c.on('data', (d) => {
        resolve(d.toString());
        c.end();
      });
      c.on('error', reject);
      c.write('request=smtpd_access_policy\nprotocol_state=RCPT\nsasl_username=\n\n');
    });
    expect(answer).toBe('action=DUNNO\n\n');
    const lookup = await new Promise<string>((resolve, reject) => {
      const c = createConnection(join(dir, 'maps'));
      c.on('data', (d) => {
        resolve(d.toString());
        c.end();
      });
      c.on('error', reject);
      c.on('close', () => resolve('(closed)'));
      const request = 'domains unknown.example';
      c.write(`${request.length}:${request},`);
    });
    expect(lookup).toBe('9:NOTFOUND ,');
    const code = await new Promise<number | null>((resolve) => {
      child?.once('exit', (c) => resolve(c));
      child?.kill('SIGTERM');
    });
    expect(code, stderr).toBe(0);
    expect(stderr).not.toMatch(/DeprecationWarning|FSTDEP/);
  });

  it('a second instance on a taken policy port stops at once with one line naming MAILSVC_POLICY_LISTEN, opening nothing and taking nothing over', async () => {
    dir = mkdtempSync(join(tmpdir(), 'mailsvc-serve-'));
    const [api, api2, policy] = [await freePort(), await freePort(), await freePort()];
    const env = (port: number): Record<string, string> => ({
      PATH: process.env.PATH ?? '', MAILSVC_DATA_DIR: dir, MAILSVC_API_PORT: String(port), MAILSVC_POLICY_LISTEN: `127.0.0.1:${policy}`, MAILSVC_ADMIN_PASSWORD: 'correct horse battery staple',
    });
    child = spawn(process.execPath, [buildCli(), 'serve'], { cwd: REPO_ROOT, env: env(api), stdio: ['ignore', 'pipe', 'pipe'] });
    await until(async () => ((await fetch(`http://127.0.0.1:${api}/health`)).ok ? true : undefined));
    const socket = join(dir, 'auth-hook.sock');
    const inode = statSync(socket).ino;

    const second = spawn(process.execPath, [buildCli(), 'serve'], { cwd: REPO_ROOT, env: env(api2), stdio: ['ignore', 'pipe', 'pipe'] });
    let stderr = '';
    second.stderr?.on('data', (d: Buffer) => (stderr += d.toString()));
    const code = await new Promise<number | null>((resolve) => second.once('exit', (c) => resolve(c)));
    expect(code).toBe(69);
    expect(stderr.trim().split('\n')).toEqual([expect.stringMatching(/^mailsvc: MAILSVC_POLICY_LISTEN \(127\.0\.0\.1:\d+\) is already in use/)]);
    // Its API port was never opened, and the first instance keeps its hook socket.
    await expect(fetch(`http://127.0.0.1:${api2}/health`)).rejects.toThrow();
    expect(statSync(socket).ino).toBe(inode);
    const answer = await new Promise<string>((resolve, reject) => {
      const c = createConnection(socket);
      c.on('data', (d) => (resolve(d.toString()), c.end()));
      c.on('error', reject);
      c.write('AUTH\timap\t127.0.0.1\t00\t00\n');
    });
    expect(answer).toMatch(/^(FAIL|ERROR)/);
  });
});
