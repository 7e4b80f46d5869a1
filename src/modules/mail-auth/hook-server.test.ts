import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createConnection } from 'node:net';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { startHookServer } from './hook-server.js';
import type { MailAuthRequest, MailAuthResult } from './mail-auth.service.js';

// Real: the hook server on a Unix socket and its line protocol. Double: the
// check behind it, so the work after an accepted login can be held or failed.

const hex = (s: string): string => Buffer.from(s, 'utf8').toString('hex');
const auth = (user: string) => `AUTH\timap\t192.0.2.1\t${hex(user)}\t${hex('pw')}\n`;

/** A connection that collects answer lines; next() waits for the n-th. */
function client(socket: string) {
  const c = createConnection(socket);
  const lines: string[] = [];
  let buf = '';
  c.setEncoding('utf8');
  c.on('data', (d: string) => {
    buf += d;
    const parts = buf.split('\n');
    buf = parts.pop() ?? '';
    lines.push(...parts);
  });
  let ended = false;
  c.on('end', () => (ended = true));
  return { send: (s: string) => c.write(s), lines, end: () => c.end(), ended: () => ended };
}

describe('mail auth hook: bookkeeping after the answer', () => {
  let dir = '';
  let socket = '';
  const logged: string[] = [];
  const log = pino({ level: 'info' }, { write: (s: string) => void logged.push(s) });
  let close: (() => Promise<void>) | undefined;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'mailsvc-hook-'));
    socket = join(dir, 'hook.sock');
  });
  afterEach(async () => {
    await close?.();
    close = undefined;
    rmSync(dir, { recursive: true, force: true });
  });

  it('answers before the work after the answer is done, and close() waits for that work', async () => {
    let release = (): void => undefined;
    let recorded = false;
    const held = new Promise<void>((r) => (release = r));
    const check = async (req: MailAuthRequest): Promise<MailAuthResult> => ({
      ok: true, user: req.user, via: 'app_password', quotaBytes: 0,
      afterAnswer: async () => {
        await held;
        recorded = true;
      },
    });
    const server = await startHookServer({ socketPath: socket }, { check }, log);
    close = server.close;
    const c = client(socket);
    c.send(auth('a@example.org'));
    await expect.poll(() => c.lines).toEqual([`OK\t${hex('a@example.org')}`]);
    expect(recorded).toBe(false);
    // close() resolves only once the work is done: held until the listener itself has closed.
    const listenerClosed = new Promise((r) => server.servers[0]?.once('close', r));
    c.end();
    let closed = false;
    const closing = server.close().then(() => (closed = true));
    close = undefined;
    await listenerClosed;
    await new Promise((r) => setImmediate(r));
    expect(closed).toBe(false);
    release();
    await closing;
    expect(recorded).toBe(true);
  });

  it('a failure after the answer is logged; the answer stands and the connection goes on', async () => {
    const check = async (req: MailAuthRequest): Promise<MailAuthResult> => ({
      ok: true, user: req.user, via: 'app_password', quotaBytes: 0,
      afterAnswer: () => Promise.reject(new Error('database is locked')),
    });
    close = (await startHookServer({ socketPath: socket }, { check }, log)).close;
    const c = client(socket);
    c.send(auth('a@example.org') + auth('b@example.org'));
    await expect.poll(() => c.lines).toEqual([`OK\t${hex('a@example.org')}`, `OK\t${hex('b@example.org')}`]);
    await expect.poll(() => logged.filter((l) => l.includes('database is locked')).length).toBe(2);
    c.end();
  });

  it('close() ends the connections the auth-workers keep, at once when idle, after its answer when a login is in flight', async () => {
    let release = (): void => undefined;
    const slow = new Promise<void>((r) => (release = r));
    let asked = false;
    const check = async (req: MailAuthRequest): Promise<MailAuthResult> => {
      if (req.user.startsWith('slow')) {
        asked = true;
        await slow;
      }
      return { ok: true, user: req.user, via: 'app_password', quotaBytes: 0 };
    };
    const server = await startHookServer({ socketPath: socket }, { check }, log);
    close = server.close;
    const idle = client(socket);
    const busy = client(socket);
    idle.send(auth('a@example.org'));
    await expect.poll(() => idle.lines).toHaveLength(1);
    busy.send(auth('slow@example.org'));
    // Both connections stay open after their logins (the idle timeout is 30 s); close() must not wait for it.
    await expect.poll(() => asked).toBe(true);
    let closed = false;
    const closing = server.close().then(() => (closed = true));
    close = undefined;
    await expect.poll(() => idle.ended()).toBe(true);
    expect(busy.ended()).toBe(false);
    expect(closed).toBe(false);
    release();
    // The login in flight is answered, then its connection ends and close() resolves.
    await expect.poll(() => busy.lines).toEqual([`OK\t${hex('slow@example.org')}`]);
    await expect.poll(() => busy.ended()).toBe(true);
    await closing;
    expect(closed).toBe(true);
  });
});
