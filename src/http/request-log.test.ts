import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase } from '../../test/helpers/dialects.js';
import type { TestDatabase } from '../../test/helpers/dialects.js';
import { startTestApp } from '../../test/helpers/app.js';
import type { TestApp } from '../../test/helpers/app.js';
import { call, login } from '../../test/helpers/flows.js';

type Line = { level: number; msg: string; method?: string; path?: string; status?: number; ms?: number; ip?: string; reqId?: string };

// One compact line per request: info for changes and failures, debug for successful reads.
describe('the request log', () => {
  let db: TestDatabase;
  let t: TestApp;
  beforeAll(async () => {
    db = await createTestDatabase('sqlite');
    t = await startTestApp(db.url, { MAILSVC_MFA_REQUIRED: 'no' });
  });
  afterAll(async () => {
    await t.close();
    await db.drop();
  });

  const requestLines = (from: number): Line[] =>
    t.logs.slice(from).flatMap((chunk) => chunk.split('\n')).filter((l) => l !== '').map((l) => JSON.parse(l) as Line).filter((l) => l.msg === 'request');

  it('a successful read is one debug line; a failed read and a change are one info line each; no headers or query', async () => {
    const token = String((await login(t)).body.access_token);
    const start = t.logs.length;
    expect((await t.app.inject({ method: 'GET', url: '/auth/mfa?x=secret-query', headers: { authorization: `Bearer ${token}` } })).statusCode).toBe(200);
    expect((await call(t, 'GET', '/auth/mfa', 'Bearer nope.nope')).status).toBe(401);
    expect((await call(t, 'POST', '/auth/logout', `Bearer ${token}`)).status).toBe(200);
    const lines = requestLines(start);
    expect(lines.map((l) => [l.level, l.method, l.path, l.status])).toEqual([
      [20, 'GET', '/auth/mfa', 200],
      [30, 'GET', '/auth/mfa', 401],
      [30, 'POST', '/auth/logout', 200],
    ]);
    for (const l of lines) {
      expect(typeof l.ms).toBe('number');
      expect(l.ip).toBe('127.0.0.1');
      expect(l.reqId).toBeTruthy();
    }
    const text = t.logs.slice(start).join('');
    expect(text).not.toContain(token);
    expect(text).not.toContain('secret-query');
    expect(text).not.toMatch(/incoming request|request completed/);
  });
});
