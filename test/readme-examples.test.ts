import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REPO_ROOT } from './helpers/cli.js';
import { ADMIN_PASSWORD, startTestApp } from './helpers/app.js';
import type { TestApp } from './helpers/app.js';
import { createTestDatabase } from './helpers/dialects.js';
import type { TestDatabase } from './helpers/dialects.js';

/**
 * The README's examples are what a newcomer copies: a token there has the
 * shape of one the service really issues (an id, a dot, a secret), and the
 * requests after it use it.
 */
describe('the README shows tokens as the service issues them', () => {
  let db: TestDatabase;
  let t: TestApp;
  beforeAll(async () => {
    db = await createTestDatabase('sqlite');
    t = await startTestApp(db.url, { MAILSVC_MFA_REQUIRED: 'no' });
  }, 60_000);
  afterAll(async () => {
    await t?.close();
    await db?.drop();
  });

  it('the access_token example has the issued shape, and the requests send it', async () => {
    const r = await t.app.inject({ method: 'POST', url: '/auth/login', payload: { username: 'admin', password: ADMIN_PASSWORD } });
    const real = r.json<{ access_token: string }>().access_token;
    const shape = (tok: string) => tok.replace(/[A-Za-z0-9_-]/g, 'x');
    const readme = readFileSync(join(REPO_ROOT, 'README.md'), 'utf8');
    const examples = [...readme.matchAll(/"access_token":"([^"]+)"/g)].map((m) => m[1] ?? '');
    expect(examples.length).toBeGreaterThan(0);
    for (const ex of examples) expect(shape(ex), ex).toBe(shape(real));
    expect(readme).not.toMatch(/Bearer tk/);
    expect(readme).toMatch(/TOKEN='[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+'/);
  });
});
