import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase } from '../../test/helpers/dialects.js';
import type { TestDatabase } from '../../test/helpers/dialects.js';
import { startTestApp } from '../../test/helpers/app.js';
import type { TestApp } from '../../test/helpers/app.js';

/** Deeply nested JSON must be a client error, never a stack overflow answered 500. */
describe('JSON bodies nested deeper than 64 levels are refused with 400', () => {
  let db: TestDatabase;
  let t: TestApp;
  beforeAll(async () => {
    db = await createTestDatabase('sqlite');
    t = await startTestApp(db.url, { MAILSVC_MFA_REQUIRED: 'no' });
  });
  afterAll(async () => {
    await t?.close();
    await db?.drop();
  });
  const post = (payload: string) => t.app.inject({ method: 'POST', url: '/auth/login', payload, headers: { 'content-type': 'application/json' } });
  const nest = (depth: number, open: string, close: string, inner: string): string => open.repeat(depth) + inner + close.repeat(depth);

  for (const depth of [5_000, 100_000]) {
    it(`${depth} levels of [ around "\\u0000", and of {"a": around a string: 400 {"detail"}`, async () => {
      for (const body of [nest(depth, '[', ']', '"\\u0000"'), nest(depth, '{"a":', '}', '"x"'), nest(depth, '[', ']', '1')]) {
        const res = await post(body);
        expect(res.statusCode).toBe(400);
        expect(res.json()).toEqual({ detail: 'JSON body nested too deeply: at most 64 levels' });
      }
    });
  }

  it('64 levels are fine (the schema decides), brackets inside strings do not count, NUL is still refused', async () => {
    const ok = await post(JSON.stringify({ username: 'admin', password: '['.repeat(500), x: JSON.parse(nest(62, '[', ']', '1')) as unknown }));
    // The parser lets it through (no 400); the schema then refuses the unknown field.
    expect(ok.statusCode).toBe(422);
    expect(ok.json().errors).toEqual([{ path: 'body.x', message: 'is not a known field' }]);
    const nul = await post(JSON.stringify({ username: 'admin', password: 'p', x: JSON.parse(nest(60, '[', ']', '"a\\u0000"')) as unknown }));
    expect(nul.statusCode).toBe(400);
    expect(nul.json()).toEqual({ detail: 'NUL characters are not allowed in the body' });
    const key = await post('{"username":"admin","password":"p","x":{"k\\u0000":1}}');
    expect(key.statusCode).toBe(400);
    // A wide body (half a million items) is walked without recursion or argument spreading.
    const wide = await post(`{"username":"admin","password":"p","x":[${'1,'.repeat(400_000)}"\\u0000"]}`);
    expect(wide.statusCode).toBe(400);
    expect(wide.json()).toEqual({ detail: 'NUL characters are not allowed in the body' });
  });
});
