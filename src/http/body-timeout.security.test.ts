import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createConnection } from 'node:net';
import { createTestDatabase } from '../../test/helpers/dialects.js';
import type { TestDatabase } from '../../test/helpers/dialects.js';
import { startTestApp } from '../../test/helpers/app.js';
import type { TestApp } from '../../test/helpers/app.js';

type Outcome = { response: string; closed: boolean; ms: number };

/** Sends the request head and then the body one byte every `everyMs`; stops after `limitMs`. */
function trickle(port: number, head: string, body: string, everyMs: number, limitMs: number): Promise<Outcome> {
  return new Promise((resolve) => {
    const t0 = Date.now();
    const c = createConnection(port, '127.0.0.1');
    let response = '';
    let i = 0;
    const timer = setInterval(() => {
      if (i < body.length && c.writable) c.write(body[i++] ?? '');
    }, everyMs);
    const finish = (closed: boolean) => {
      clearInterval(timer);
      clearTimeout(limit);
      c.destroy();
      resolve({ response, closed, ms: Date.now() - t0 });
    };
    const limit = setTimeout(() => finish(false), limitMs);
    c.on('data', (d) => (response += d.toString()));
    c.on('error', () => undefined);
    c.on('close', () => finish(true));
    c.write(head);
  });
}

/** A body trickled in slowly must not hold a connection (and a request) open for ever. */
describe('request bodies that do not arrive in time are answered 408 {"detail"}', () => {
  let db: TestDatabase;
  let t: TestApp;
  let port = 0;
  beforeAll(async () => {
    db = await createTestDatabase('sqlite');
    t = await startTestApp(db.url, { MAILSVC_MFA_REQUIRED: 'no', MAILSVC_HTTP_BODY_TIMEOUT: '1' });
    const address = await t.app.listen({ host: '127.0.0.1', port: 0 });
    port = Number(new URL(address).port);
  });
  afterAll(async () => {
    await t?.close();
    await db?.drop();
  });

  it('a JSON body trickled one byte every 200 ms: 408 with a JSON detail after about 1 s, and the connection is closed', async () => {
    const body = JSON.stringify({ username: 'admin', password: 'x'.repeat(60) });
    const head = `POST /auth/login HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n`;
    const r = await trickle(port, head, body, 200, 5000);
    expect(r.response).toMatch(/^HTTP\/1\.1 408 /);
    expect(r.response).toMatch(/\r\nconnection: close\r\n/i);
    const json = r.response.slice(r.response.indexOf('\r\n\r\n') + 4);
    expect(JSON.parse(json)).toEqual({ detail: 'Request body not received within 1 s' });
    expect(r.closed).toBe(true);
    expect(r.ms).toBeGreaterThanOrEqual(900);
    expect(r.ms).toBeLessThan(3000);
    expect(t.logs.filter((l) => l.includes('"level":50'))).toEqual([]);
  });

  it('a chunked body that never ends: the same', async () => {
    const head = 'POST /auth/login HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n';
    const r = await trickle(port, head, '1\r\n{\r\n'.repeat(50), 200, 5000);
    expect(r.response).toMatch(/^HTTP\/1\.1 408 /);
    expect(r.closed).toBe(true);
  });

  it('a body sent at once is not affected, and the keep-alive connection serves the next request', async () => {
    const body = JSON.stringify({ username: 'admin', password: 'wrong' });
    const req = `POST /auth/login HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`;
    const r = await trickle(port, req + 'GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n', '', 100, 2500);
    expect(r.response).toMatch(/^HTTP\/1\.1 401 /);
    expect(r.response).toContain('{"status":"ok"}');
    expect(r.response).not.toContain(' 408 ');
  });
});
