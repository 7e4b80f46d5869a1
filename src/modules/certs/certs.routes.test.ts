import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase } from '../../../test/helpers/dialects.js';
import type { TestDatabase } from '../../../test/helpers/dialects.js';
import { startTestApp } from '../../../test/helpers/app.js';
import type { TestApp } from '../../../test/helpers/app.js';
import { expectOneErrorLine, runCli } from '../../../test/helpers/cli.js';

/** The routes and commands' rules that need no CA: bad input is a 4xx (an exit code and one line) and changes nothing. */
describe('certs routes', () => {
  let db: TestDatabase;
  let t: TestApp;
  const call = (method: 'GET' | 'POST', url: string, body?: object) => t.app.inject({ method, url, headers: { authorization: t.basic() }, ...(body ? { payload: body } : {}) });
  beforeAll(async () => {
    db = await createTestDatabase('sqlite');
    t = await startTestApp(db.url, { MAILSVC_MFA_REQUIRED: 'no', MAILSVC_MAIL_HOSTNAME: 'mail.example.org', MAILSVC_ACME_DIRECTORY_URL: 'https://127.0.0.1:9/dir' });
    expect((await call('POST', '/domains', { name: 'example.org' })).statusCode).toBe(201);
  }, 60_000);
  afterAll(async () => {
    await t?.close();
    await db?.drop();
  });

  it('lists none at first; an unknown certificate is 404, a malformed name 422', async () => {
    expect((await call('GET', '/admin/certs')).json()).toEqual({ items: [], total: 0, limit: 0, offset: 0 });
    expect((await call('GET', '/admin/certs/mail')).statusCode).toBe(404);
    expect((await call('GET', '/admin/certs/Not_A_Name')).statusCode).toBe(422);
    expect((await call('POST', '/admin/certs/mail/revoke')).statusCode).toBe(404);
    expect((await t.app.inject({ method: 'GET', url: '/admin/certs' })).statusCode).toBe(401);
  });

  it("issuing a name that is not this server's is 400 before the CA is asked; an unknown field 422; a CA that cannot be reached 503", async () => {
    const foreign = await call('POST', '/admin/certs/issue', { names: ['www.other.example'] });
    expect(foreign.statusCode).toBe(400);
    expect(foreign.json<{ detail: string }>().detail).toMatch(/www\.other\.example is not one of this server's names/);
    expect((await call('POST', '/admin/certs/issue', { names: ['mail.example.org'], colour: 'red' })).statusCode).toBe(422);
    expect((await call('POST', '/admin/certs/issue', { names: ['bad..name'] })).statusCode).toBe(422);
    const dead = await call('POST', '/admin/certs/issue', { names: ['mail.example.org', 'mta-sts.example.org'] });
    expect(dead.statusCode).toBe(503);
    expect(dead.json<{ detail: string }>().detail).toMatch(/cannot be reached .*MAILSVC_ACME_DIRECTORY_URL/);
    // The failure is recorded on the certificate (its next attempt after the backoff), no certificate in service.
    const shown = (await call('GET', '/admin/certs/mail')).json<{ state: string; failures: number; next_attempt_at: string | null }>();
    expect(shown).toMatchObject({ state: 'none', failures: 1 });
    expect(shown.next_attempt_at).not.toBeNull();
    expect((await call('GET', '/health/details')).json<{ degraded_by: string[] }>().degraded_by.filter((d) => d.startsWith('certificate'))).toEqual([]);
  }, 60_000);
});

describe('certs on the command line', () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'mailsvc-certs-cli-'));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  const env = () => ({ MAILSVC_DATA_DIR: dir, MAILSVC_CONFIG_FILE: join(dir, 'none.conf'), MAILSVC_LOG_LEVEL: 'warn' });

  it('list --json is an array; issue without a mail host name, or with a foreign name, is one line and exit 2', async () => {
    expect((await runCli(['db', 'migrate'], { env: env() })).code).toBe(0);
    const list = await runCli(['certs', 'list', '--json'], { env: env() });
    expect(list.code, list.stderr).toBe(0);
    expect(JSON.parse(list.stdout)).toEqual([]);
    const none = await runCli(['certs', 'issue'], { env: env() });
    expect(none.code).toBe(2);
    expect(expectOneErrorLine(none)).toMatch(/set MAILSVC_MAIL_HOSTNAME/);
    const foreign = await runCli(['certs', 'issue', '--names', 'www.other.example'], { env: { ...env(), MAILSVC_MAIL_HOSTNAME: 'mail.example.org' } });
    expect(foreign.code).toBe(2);
    expect(expectOneErrorLine(foreign)).toMatch(/not one of this server's names/);
    const reason = await runCli(['certs', 'revoke', '--reason', '9'], { env: env() });
    expect(reason.code).toBe(2);
    expect((await runCli(['certs', 'show', 'mail'], { env: env() })).code).toBe(4);
  }, 120_000);
});
