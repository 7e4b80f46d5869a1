import { afterEach, describe, expect, it } from 'vitest';
import { createConnection, createServer } from 'node:net';
import type { Server, Socket } from 'node:net';
import { netstringFramer, serveRecords } from './line-server.js';
import type { RecordServerOptions } from './line-server.js';

/** A record server on a loopback port that counts what its handler saw. */
async function start(opts: Partial<RecordServerOptions> = {}, handle?: (r: string) => Promise<string | null>) {
  const seen: string[] = [];
  let concurrent = 0;
  let maxConcurrent = 0;
  let closedByServer = 0;
  const server: Server = createServer((s) => {
    s.on('close', () => closedByServer++);
    serveRecords(
      s,
      { separator: '\n', maxRecordBytes: 1024, recordMs: 300, idleMs: 5000, ...opts },
      handle ??
        (async (r) => {
          seen.push(r);
          maxConcurrent = Math.max(maxConcurrent, ++concurrent);
          await new Promise((res) => setImmediate(res));
          concurrent--;
          return `${r.length}\n`;
        }),
      () => 'ERR\n',
    );
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  const addr = server.address();
  const port = typeof addr === 'object' && addr ? addr.port : 0;
  return { server, port, seen, maxConcurrent: () => maxConcurrent, closedByServer: () => closedByServer };
}

function closedWithin(c: Socket, ms: number): Promise<boolean> {
  return new Promise((resolve) => {
    const t = setTimeout(() => resolve(false), ms);
    c.on('close', () => {
      clearTimeout(t);
      resolve(true);
    });
  });
}

const servers: Server[] = [];
afterEach(async () => {
  for (const s of servers.splice(0)) await new Promise<void>((r) => s.close(() => r()));
});

describe('record server: one connection cannot make the process hold more than a little', () => {
  it('a peer that writes and never reads: reading stops (a bounded number of records handled), then it is disconnected', async () => {
    let handled = 0;
    // 1 KiB answers: more than the kernel's socket buffers take, so the server must stop.
    const s = await start({}, async () => {
      handled++;
      return `${'a'.repeat(1023)}\n`;
    });
    servers.push(s.server);
    const c = createConnection(s.port, '127.0.0.1');
    c.pause();
    c.on('error', () => undefined);
    // 2 MiB of one-byte records, 1 M answers of 1 KiB that nobody reads.
    const chunk = Buffer.from('x\n'.repeat(32 * 1024));
    let written = 0;
    const pump = (): void => {
      while (written < 32 && c.write(chunk)) written++;
      if (written < 32) c.once('drain', pump);
    };
    c.once('connect', pump);
    // The paused client would not notice the close itself: watch the server's side.
    const t0 = Date.now();
    while (s.closedByServer() === 0 && Date.now() - t0 < 30_000) await new Promise((r) => setTimeout(r, 20));
    expect(s.closedByServer()).toBe(1);
    c.destroy();
    // Only what the kernel's buffers take back from a stalled reader gets handled, not the whole 1 M records.
    expect(handled).toBeGreaterThan(0);
    expect(handled).toBeLessThan(100_000);
    console.log(`[line-server] non-reading peer: ${handled} records handled of ${written * 32 * 1024} sent before the disconnect`);
  });

  it('an over-long record closes the connection without a call to the handler', async () => {
    const s = await start();
    servers.push(s.server);
    const c = createConnection(s.port, '127.0.0.1');
    c.on('error', () => undefined);
    const closed = closedWithin(c, 2000);
    c.write('y'.repeat(4096));
    expect(await closed).toBe(true);
    expect(s.seen).toEqual([]);
  });

  it('a silent connection and a record trickled slower than recordMs are closed', async () => {
    const s = await start({ recordMs: 200 });
    servers.push(s.server);
    const silent = createConnection(s.port, '127.0.0.1');
    const t0 = Date.now();
    expect(await closedWithin(silent, 2000)).toBe(true);
    expect(Date.now() - t0).toBeLessThan(1500);

    const slow = createConnection(s.port, '127.0.0.1');
    slow.on('error', () => undefined);
    const closed = closedWithin(slow, 3000);
    const trickle = setInterval(() => slow.writable && slow.write('z'), 50);
    expect(await closed).toBe(true);
    clearInterval(trickle);
    expect(s.seen).toEqual([]);
  });

  it('a null answer closes the connection after the answers before it, and later records are not handled', async () => {
    const handled: string[] = [];
    const s = await start({}, async (r) => {
      handled.push(r);
      return r === 'bad' ? null : `ok ${r}\n`;
    });
    servers.push(s.server);
    const c = createConnection(s.port, '127.0.0.1');
    let data = '';
    c.on('data', (d) => (data += d.toString()));
    const closed = closedWithin(c, 2000);
    c.write('a\nb\nbad\nc\n');
    expect(await closed).toBe(true);
    expect(data).toBe('ok a\nok b\n');
    expect(handled).toEqual(['a', 'b', 'bad']);
  });

  it('records on one connection are handled in order, at most 4 at a time, and all answered', async () => {
    const s = await start();
    servers.push(s.server);
    const c = createConnection(s.port, '127.0.0.1');
    let data = '';
    const done = new Promise<void>((resolve) => c.on('data', (d) => {
      data += d.toString();
      if (data.split('\n').length > 1000) resolve();
    }));
    c.write(Array.from({ length: 1000 }, (_, i) => `${'r'.repeat(i % 7)}\n`).join(''));
    await done;
    c.destroy();
    expect(data.trim().split('\n')).toEqual(Array.from({ length: 1000 }, (_, i) => String(i % 7)));
    expect(s.maxConcurrent()).toBeLessThanOrEqual(4);
  });
});

describe('record server with netstrings (the socketmap protocol)', () => {
  const framer = netstringFramer(100);
  it('frames netstrings whole, waits for partial ones, and rejects what cannot be one', () => {
    expect(framer(Buffer.from('5:hello,3:abc,'))).toEqual({ record: 'hello', next: 8 });
    expect(framer(Buffer.from('0:,'))).toEqual({ record: '', next: 3 });
    expect(framer(Buffer.from('5:hel'))).toBeNull();
    expect(framer(Buffer.from('5:hello'))).toBeNull();
    expect(framer(Buffer.from('10'))).toBeNull();
    expect(framer(Buffer.from(''))).toBeNull();
    // Multi-byte UTF-8: the length counts bytes.
    expect(framer(Buffer.from('2:é,'))).toEqual({ record: 'é', next: 5 });
    for (const bad of ['5:hello;', ':x,', 'x:', '05:hello,', '-1:,', '1000:', '101:', 'abcd']) expect(framer(Buffer.from(bad)), bad).toBe('invalid');
  });

  it('answers records split across writes in order, and drops a peer whose length is over the limit', async () => {
    const s = await start({ separator: { netstring: true }, maxRecordBytes: 100 }, async (r) => `${r.length}:${r},`);
    servers.push(s.server);
    const c = createConnection(s.port, '127.0.0.1');
    let got = '';
    c.on('data', (d: Buffer) => (got += d.toString()));
    c.write('3:ab');
    await new Promise((r) => setTimeout(r, 20));
    c.write('c,2:de,');
    await expect.poll(() => got).toBe('3:abc,2:de,');
    const closed = closedWithin(c, 3000);
    c.write('101:');
    expect(await closed).toBe(true);
  });
});
