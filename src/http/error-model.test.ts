import { connect } from 'node:net';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase } from '../../test/helpers/dialects.js';
import type { TestDatabase } from '../../test/helpers/dialects.js';
import { ADMIN_PASSWORD, startTestApp } from '../../test/helpers/app.js';
import type { TestApp } from '../../test/helpers/app.js';
import { call, enableTotp, login } from '../../test/helpers/flows.js';
import { oathtoolInstalled } from '../../test/helpers/totp.js';
import { skipNotice } from '../../test/helpers/services.js';

const haveOathtool = oathtoolInstalled();
if (!haveOathtool) skipNotice('oathtool (Debian package oathtool)', 'not on PATH');

/** Sends raw bytes to the listening app and returns the whole answer (status line, headers, body). */
function rawHttp(port: number, request: string): Promise<{ status: number; headers: string; body: string }> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    let data = '';
    socket.setTimeout(5000, () => socket.destroy(new Error('no answer')));
    socket.on('data', (chunk: Buffer) => (data += chunk.toString('utf8')));
    socket.on('error', reject);
    socket.on('close', () => {
      const [head = '', body = ''] = data.split('\r\n\r\n');
      resolve({ status: Number(/^HTTP\/1\.1 (\d{3})/.exec(head)?.[1] ?? 0), headers: head, body });
    });
    socket.write(request);
  });
}

describe('the error model: every 4xx is {"detail"}', () => {
  let db: TestDatabase;
  let t: TestApp;
  let port: number;
  beforeAll(async () => {
    db = await createTestDatabase('sqlite');
    t = await startTestApp(db.url, { MAILSVC_MFA_REQUIRED: 'no' });
    await t.app.listen({ host: '127.0.0.1', port: 0 });
    port = (t.app.server.address() as AddressInfo).port;
  });
  afterAll(async () => {
    await t.close();
    await db.drop();
  });
  const json = (method: 'POST' | 'PUT' | 'PATCH', url: string, payload: string, headers: Record<string, string> = {}) =>
    t.app.inject({ method, url, payload, headers: { 'content-type': 'application/json', authorization: t.basic(), ...headers } });

  it('an unknown HTTP method, which Node refuses itself, is 400 with a detail', async () => {
    const res = await rawHttp(port, 'FOO /health HTTP/1.1\r\nHost: x\r\n\r\n');
    expect(res.status).toBe(400);
    expect(JSON.parse(res.body)).toEqual({ detail: 'Bad request: unknown HTTP method' });
  });

  it('a huge URL or header is 431 with a detail', async () => {
    const url = await rawHttp(port, `GET /health?x=${'a'.repeat(20_000)} HTTP/1.1\r\nHost: x\r\n\r\n`);
    expect(url.status).toBe(431);
    expect(JSON.parse(url.body).detail).toMatch(/header fields too large/i);
    const header = await rawHttp(port, `GET /health HTTP/1.1\r\nHost: x\r\nX-Big: ${'b'.repeat(20_000)}\r\n\r\n`);
    expect(header.status).toBe(431);
    expect(header.headers).toMatch(/content-type: application\/json/i);
  });

  it('a known path with a method it does not serve is 405 with Allow; an unknown path stays 404', async () => {
    const res = await t.app.inject({ method: 'PUT', url: '/domains' });
    expect(res.statusCode).toBe(405);
    expect(res.headers.allow).toBe('GET, HEAD, POST');
    expect(res.json().detail).toMatch(/^Method not allowed: PUT \/domains/);
    const param = await t.app.inject({ method: 'POST', url: '/domains/example.org' });
    expect(param.statusCode).toBe(405);
    expect(param.headers.allow).toBe('DELETE, GET, HEAD, PATCH');
    const nf = await t.app.inject({ method: 'PUT', url: '/nothing-here' });
    expect(nf.statusCode).toBe(404);
    expect(nf.headers.allow).toBeUndefined();
  });

  it('text/plain and other non-JSON bodies are 415', async () => {
    for (const type of ['text/plain', 'text/plain; charset=utf-8', 'application/xml']) {
      const res = await t.app.inject({ method: 'POST', url: '/domains', payload: '{"name":"example.org"}', headers: { 'content-type': type, authorization: t.basic() } });
      expect(res.statusCode, type).toBe(415);
      expect(res.json()).toEqual({ detail: 'Unsupported content type: send application/json' });
    }
    expect((await call(t, 'GET', '/domains/example.org', t.basic())).status).toBe(404);
  });

  it('an unknown body field is 422 naming it, and nothing is created', async () => {
    const res = await json('POST', '/domains', JSON.stringify({ name: 'example.org', colour: 'red' }));
    expect(res.statusCode).toBe(422);
    expect(res.json()).toEqual({ detail: 'Invalid request: body.colour is not a known field', errors: [{ path: 'body.colour', message: 'is not a known field' }] });
    expect((await call(t, 'GET', '/domains/example.org', t.basic())).status).toBe(404);
    const loginRes = await t.app.inject({ method: 'POST', url: '/auth/login', payload: { username: 'admin', password: ADMIN_PASSWORD, remember_me: true } });
    expect(loginRes.statusCode).toBe(422);
    expect(loginRes.json().detail).toContain('remember_me');
  });

  it('a __proto__ key is refused with a message that says so', async () => {
    const res = await json('POST', '/domains', '{"name":"example.org","__proto__":{"admin":true}}');
    expect(res.statusCode).toBe(400);
    expect(res.json().detail).toMatch(/^Forbidden key in the JSON body: "__proto__"/);
  });

  it('a lone UTF-16 surrogate in a JSON string is refused, not stored mangled', async () => {
    await json('POST', '/domains', JSON.stringify({ name: 'lone.example' }));
    const acc = await json('POST', '/accounts', JSON.stringify({ address: 'a@lone.example', password: 'a long enough password 1' }));
    expect(acc.statusCode).toBe(201);
    for (const body of ['{"display_name":"x\\ud800y"}', '{"display_name":"\\udc00"}', '{"display_name":"\\ud800"}']) {
      const res = await json('PATCH', `/accounts/${String(acc.json().id)}`, body);
      expect(res.statusCode, body).toBe(400);
      expect(res.json().detail).toMatch(/lone UTF-16 surrogate/);
    }
    // A proper pair is text and passes.
    const pair = await json('PATCH', `/accounts/${String(acc.json().id)}`, '{"display_name":"\\ud83d\\ude00"}');
    expect(pair.statusCode).toBe(200);
    expect(pair.json().display_name).toBe('😀');
  });

  it('impossible dates are 422, never shifted to the next month', async () => {
    await json('POST', '/domains', JSON.stringify({ name: 'dates.example' }));
    const acc = await json('POST', '/accounts', JSON.stringify({ address: 'd@dates.example', password: 'a long enough password 1' }));
    for (const when of ['2030-02-30T00:00:00Z', '2030-04-31', '2031-02-29', '2030-01-01T24:30:00Z', '2030-13-01']) {
      const ap = await json('POST', `/accounts/${String(acc.json().id)}/app-passwords`, JSON.stringify({ name: 'phone', expires_at: when }));
      expect(ap.statusCode, when).toBe(422);
      expect(ap.json().errors).toEqual([{ path: 'body.expires_at', message: expect.stringMatching(/real ISO 8601/) }]);
      const key = await json('POST', '/auth/api-keys', JSON.stringify({ name: 'k', scopes: ['read'], expires_at: when }));
      expect(key.statusCode, when).toBe(422);
    }
    const listed = await call(t, 'GET', `/accounts/${String(acc.json().id)}/app-passwords`, t.basic());
    expect(listed.body).toEqual([]);
    const leap = await json('POST', `/accounts/${String(acc.json().id)}/app-passwords`, JSON.stringify({ name: 'phone', expires_at: '2032-02-29T00:00:00Z' }));
    expect(leap.statusCode).toBe(201);
    expect(leap.json().expires_at).toBe('2032-02-29T00:00:00.000Z');
    const audit = await call(t, 'GET', '/admin/audit?from=2030-02-30T00:00:00Z', t.basic());
    expect(audit.status).toBe(422);
  });

  it('control characters are refused in every name field', async () => {
    await json('POST', '/domains', JSON.stringify({ name: 'ctl.example' }));
    const acc = await json('POST', '/accounts', JSON.stringify({ address: 'c@ctl.example', password: 'a long enough password 1' }));
    const id = String(acc.json().id);
    const cases: [string, 'POST' | 'PUT' | 'PATCH', string, Record<string, unknown>][] = [
      ['domain', 'POST', '/domains', { name: 'ctl2.example\n' }],
      ['domain (inside)', 'POST', '/domains', { name: 'ctl\u001b[2J.example' }],
      ['account address', 'POST', '/accounts', { address: 'x\r@ctl.example', password: 'a long enough password 1' }],
      ['display name', 'PATCH', `/accounts/${id}`, { display_name: 'Eve\u001b]0;owned\u0007' }],
      ['display name (bidi)', 'PATCH', `/accounts/${id}`, { display_name: 'Eve\u202egnp.exe' }],
      ['alias source', 'POST', '/aliases', { source: 'info@ctl.example\t', destinations: ['c@ctl.example'] }],
      ['alias destination', 'POST', '/aliases', { source: 'info@ctl.example', destinations: ['c@ctl.example\n'] }],
      ['app-password name', 'POST', `/accounts/${id}/app-passwords`, { name: 'phone\u0085' }],
      ['API-key name', 'POST', '/auth/api-keys', { name: 'mon\u0000itor'.replace('\u0000', '\u0007'), scopes: ['read'], expires_at: new Date(Date.now() + 86_400_000).toISOString() }],
      ['provider client_id', 'PUT', '/auth/mfa/providers', { code: 'provider_a', client_id: 'id\u001b' }],
      ['provider route', 'PUT', '/auth/mfa/providers', { code: 'provider_a', route: 'r\n' }],
    ];
    for (const [what, method, url, body] of cases) {
      const res = await json(method, url, JSON.stringify(body));
      expect(res.statusCode, what).toBe(422);
      expect(res.json().detail, what).toMatch(/must not contain control characters/);
    }
    expect((await call(t, 'GET', '/domains/ctl2.example', t.basic())).status).toBe(404);
    expect((await call(t, 'GET', `/accounts/${id}`, t.basic())).body.display_name).toBe('');
    expect((await call(t, 'GET', '/aliases', t.basic())).body).toMatchObject({ total: 0 });
  });

  it('every API answer is Cache-Control: no-store, the token and app-password answers included', async () => {
    const signIn = await login(t);
    expect(signIn.status).toBe(200);
    expect(signIn.headers['cache-control']).toBe('no-store');
    const acc = await json('POST', '/accounts', JSON.stringify({ address: 'n@dates.example', password: 'a long enough password 1' }));
    const ap = await json('POST', `/accounts/${String(acc.json().id)}/app-passwords`, JSON.stringify({ name: 'phone' }));
    expect(ap.statusCode).toBe(201);
    expect(ap.headers['cache-control']).toBe('no-store');
    const key = await json('POST', '/auth/api-keys', JSON.stringify({ name: 'k', scopes: ['read'], expires_at: new Date(Date.now() + 86_400_000).toISOString() }));
    expect(key.headers['cache-control']).toBe('no-store');
    expect((await t.app.inject({ method: 'GET', url: '/nothing' })).headers['cache-control']).toBe('no-store');
  });
});

describe.skipIf(!haveOathtool)('WWW-Authenticate after enrolment', () => {
  let db: TestDatabase;
  let t: TestApp;
  beforeAll(async () => {
    db = await createTestDatabase('sqlite');
    t = await startTestApp(db.url);
  });
  afterAll(async () => {
    await t.close();
    await db.drop();
  });

  it('offers Basic before a second factor is enrolled and Bearer alone once Basic is refused', async () => {
    const before = await call(t, 'GET', '/domains', '');
    expect(before.status).toBe(401);
    expect(before.headers['www-authenticate']).toMatch(/Basic/);
    await enableTotp(t);
    for (const auth of ['', t.basic(), 'Bearer nope.nope']) {
      const res = await call(t, 'GET', '/domains', auth);
      expect(res.status, auth).toBe(401);
      expect(res.headers['www-authenticate'], auth).toBe('Bearer realm="mailsvc"');
    }
  });
});
