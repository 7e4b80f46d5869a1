import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase } from '../../../test/helpers/dialects.js';
import type { TestDatabase } from '../../../test/helpers/dialects.js';
import { startTestApp } from '../../../test/helpers/app.js';
import type { TestApp } from '../../../test/helpers/app.js';
import { expectOneErrorLine, runCli } from '../../../test/helpers/cli.js';

type Job = { id: string; kind: string; state: string; progress: number; message: string; result: unknown };

/** Follows a job until it ends (polls GET /admin/jobs/{id}); answers its record. */
async function jobEnd(t: TestApp, id: string): Promise<Job> {
  const get = async () => (await t.app.inject({ method: 'GET', url: `/admin/jobs/${id}`, headers: { authorization: t.basic() } })).json<Job>();
  await expect.poll(async () => (await get()).state, { timeout: 60_000, interval: 50 }).toMatch(/succeeded|failed/);
  return get();
}

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

  it("bad input is refused before any job is queued: a name not this server's 400, an unknown field or a malformed name 422; the job of a CA that cannot be reached fails with its line and code", async () => {
    const jobsBefore = await t.ctx.db.selectFrom('jobs').select('id').execute();
    const foreign = await call('POST', '/admin/certs/issue', { names: ['www.other.example'] });
    expect(foreign.statusCode).toBe(400);
    expect(foreign.json<{ detail: string }>().detail).toMatch(/www\.other\.example is not one of this server's names/);
    expect((await call('POST', '/admin/certs/issue', { names: ['mail.example.org'], colour: 'red' })).statusCode).toBe(422);
    expect((await call('POST', '/admin/certs/issue', { names: ['bad..name'] })).statusCode).toBe(422);
    expect((await call('POST', '/admin/certs/issue', { name: 'Bad_Name' })).statusCode).toBe(422);
    expect((await call('POST', '/admin/certs/renew', { name: 'nothing' })).statusCode).toBe(404);
    expect((await call('POST', '/admin/certs/renew', { force: 'yes' })).statusCode).toBe(422);
    expect(await t.ctx.db.selectFrom('jobs').select('id').execute()).toEqual(jobsBefore);
    const dead = await call('POST', '/admin/certs/issue', { names: ['mail.example.org', 'mta-sts.example.org'] });
    expect(dead.statusCode).toBe(202);
    const { job_id } = dead.json<{ job_id: string }>();
    const job = await jobEnd(t, job_id);
    expect(job).toMatchObject({ kind: 'cert-issue', state: 'failed', result: { error: { code: 'unavailable' } } });
    expect(job.message).toMatch(/cannot be reached .*MAILSVC_ACME_DIRECTORY_URL/);
    // The failure is recorded on the certificate (its next attempt after the backoff), no certificate in service.
    const shown = (await call('GET', '/admin/certs/mail')).json<{ state: string; failures: number; next_attempt_at: string | null }>();
    expect(shown).toMatchObject({ state: 'none', failures: 1 });
    expect(shown.next_attempt_at).not.toBeNull();
    expect((await call('GET', '/health/details')).json<{ degraded_by: string[] }>().degraded_by.filter((d) => d.startsWith('certificate'))).toEqual([]);
  }, 60_000);

  it('renew is a job whose result lists the outcomes: waiting out the backoff, then (forced) failed against the dead CA', async () => {
    const waiting = await call('POST', '/admin/certs/renew', {});
    expect(waiting.statusCode).toBe(202);
    const skipped = await jobEnd(t, waiting.json<{ job_id: string }>().job_id);
    expect(skipped).toMatchObject({ kind: 'cert-renew', state: 'succeeded', progress: 1, result: [{ name: 'mail', action: 'skipped', detail: expect.stringMatching(/waiting until .* after 1 failed attempt/) }] });
    const forced = await call('POST', '/admin/certs/renew', { name: 'mail', force: true });
    const failed = await jobEnd(t, forced.json<{ job_id: string }>().job_id);
    expect(failed).toMatchObject({ state: 'succeeded', result: [{ name: 'mail', action: 'failed', detail: expect.stringMatching(/cannot be reached/), certificate: { failures: 2 } }] });
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

