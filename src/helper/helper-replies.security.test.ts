import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { createConnection } from 'node:net';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import pino from 'pino';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { helperConfig } from '../../test/helpers/helper-config.js';
import { exchange, request, startHelperProcess } from '../../test/helpers/helper-process.js';
import type { ActionSpec } from './action-types.js';
import { HelperRunner } from './runner.js';
import { startHelperServer } from './server.js';

const SAID = 'LINE-FROM-A-ROOT-ONLY-FILE root:$6$x';

/**
 * A reply never carries a daemon's error output: a program that fails may
 * quote a file it read (nft, rspamadm and postfix do), and the caller may have
 * chosen what it read. The reply names the program and its exit code; the
 * output goes to the helper's log (root's journal).
 */
describe("a failed program's output stays in the helper's log", () => {
  const dir = mkdtempSync(join(tmpdir(), 'mailsvc-replies-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('doveadm exits 75 printing a file line on stderr: the reply is "doveadm exited 75; …", the line is in the log only', async () => {
    const doveadm = join(dir, 'doveadm');
    writeFileSync(doveadm, `#!/bin/sh\necho '${SAID}' >&2\nexit 75\n`, { mode: 0o755 });
    const helper = await startHelperProcess({ env: { MAILSVC_DOVEADM: doveadm } });
    try {
      const { answers } = await exchange(helper.socket, request(1, 'doveadm-kick', ['alice@example.org']), 1);
      expect(answers[0], `the helper's log: ${JSON.stringify(helper.logs())}; alive: ${helper.alive()}`).toEqual({ id: 1, ok: false, error: 'failed', detail: "doveadm exited 75; its output is in the helper's log", exec: { kind: 'exit', code: 75 } });
      expect(JSON.stringify(answers)).not.toContain('ROOT-ONLY');
      await vi.waitFor(() => expect(JSON.stringify(helper.logs().filter((l) => l.level === 40))).toContain('LINE-FROM-A-ROOT-ONLY-FILE'), { timeout: 30_000 });
    } finally {
      await helper.stop();
    }
  });
});

describe('a request already sent is answered, however late the helper gets to read it', () => {
  it('the helper stalls past the first-request deadline with the request waiting in its socket: it reads it and answers, it does not cut the connection', async () => {
    const actions = new Map<string, ActionSpec>([['quick', { writes: () => [], summary: 'answers', params: [], run: () => Promise.resolve({ code: 0, stdout: 'ok', stderr: '' }) }]]);
    const log = pino({ level: 'silent' }, new Writable({ write: (_c, _e, cb) => cb() }));
    const path = join(mkdtempSync(join(tmpdir(), 'mailsvc-stall-')), 'h.sock');
    let identified!: () => void;
    const seen = new Promise<void>((r) => (identified = r));
    // firstRequestMs 0: the connection's first deadline is one second after the helper starts reading it.
    const { close } = await startHelperServer({ path, group: null }, new HelperRunner(helperConfig(), log, actions), log, {
      firstRequestMs: 0,
      identify: () => (identified(), Promise.resolve({ kind: 'root', pid: process.pid, uid: 0 })),
    });
    const conn = createConnection(path);
    try {
      let got = '';
      const answered = new Promise<string>((resolve) => {
        conn.setEncoding('utf8').on('data', (d: string) => (got += d).includes('\n') && resolve(got));
        conn.on('close', () => resolve(got));
      });
      await seen;
      await new Promise((r) => setTimeout(r, 50));
      // From the check phase (after this turn's poll): the request goes into the socket, then this process (the
      // helper too) stalls past the deadline. The next turn starts with the timers, before any poll reads the line.
      await new Promise((r) => setImmediate(r));
      conn.write(request(1, 'quick', []));
      const until = Date.now() + 1300;
      while (Date.now() < until) {
        // a stalled process
      }
      expect(JSON.parse(await answered)).toMatchObject({ id: 1, ok: true, stdout: 'ok' });
    } finally {
      conn.destroy();
      await close();
    }
  });
});

describe('a run action has a deadline: one stuck request never holds its connection', () => {
  it('a run action that never ends is answered failed/timeout at its deadline, its signal fires, and the connection serves the next request', async () => {
    let aborted = false;
    const actions = new Map<string, ActionSpec>([
      ['stuck', { writes: () => [], summary: 'never ends', params: [], deadlineMs: 300, run: (_a, _c, ctx) => new Promise(() => ctx.signal.addEventListener('abort', () => (aborted = true))) }],
      ['quick', { writes: () => [], summary: 'answers', params: [], run: () => Promise.resolve({ code: 0, stdout: 'ok', stderr: '' }) }],
    ]);
    const log = pino({ level: 'silent' }, new Writable({ write: (_c, _e, cb) => cb() }));
    const path = join(mkdtempSync(join(tmpdir(), 'mailsvc-deadline-')), 'h.sock');
    const { close } = await startHelperServer({ path, group: null }, new HelperRunner(helperConfig(), log, actions), log);
    try {
      const { answers } = await exchange(path, request(1, 'stuck', []) + request(2, 'quick', []), 2, 20_000);
      expect(answers[0]).toEqual({ id: 1, ok: false, error: 'failed', detail: 'stuck did not finish within 300 ms; the helper stopped waiting for it', exec: { kind: 'timeout' } });
      expect(answers[1]).toMatchObject({ id: 2, ok: true, stdout: 'ok' });
      expect(aborted).toBe(true);
    } finally {
      await close();
    }
  });
});
