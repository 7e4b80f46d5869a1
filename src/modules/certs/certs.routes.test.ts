import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer as createHttpsServer } from 'node:https';
import type { Server as HttpsServer } from 'node:https';
import type { Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase } from '../../../test/helpers/dialects.js';
import type { TestDatabase } from '../../../test/helpers/dialects.js';
import { startTestApp } from '../../../test/helpers/app.js';
import type { TestApp } from '../../../test/helpers/app.js';
import { CLI_BIN, REPO_ROOT, expectOneErrorLine, runCli } from '../../../test/helpers/cli.js';
import { freePort } from '../../../test/helpers/mail-daemons.js';
import { makeTestCa } from '../../../test/helpers/test-ca.js';
import type { TestCa } from '../../../test/helpers/test-ca.js';

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
    expect(existsSync(join(t.dataDir, 'certs-mail.lock'))).toBe(false);
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

/**
 * A stand-in ACME CA over HTTPS that holds every request until told
 * otherwise: whoever asks it is in the middle of an issue, holding the
 * certificate's lock, for as long as the test wants.
 */
async function holdingCa(): Promise<{ url: string; caFile: string; asked: () => number; mode: 'hold' | 'reset'; release(): void; close(): Promise<void> }> {
  const tls: TestCa = makeTestCa(['127.0.0.1']);
  const caFile = join(tls.dir, 'ca-only.pem');
  writeFileSync(caFile, tls.ca);
  const held: Socket[] = [];
  let asked = 0;
  const state = { mode: 'hold' as 'hold' | 'reset' };
  const server: HttpsServer = createHttpsServer({ cert: tls.cert, key: tls.key }, (req) => {
    asked += 1;
    if (state.mode === 'reset') req.socket.destroy();
    else held.push(req.socket);
  });
  const port = await freePort();
  await new Promise<void>((r) => server.listen(port, '127.0.0.1', () => r()));
  return Object.assign(state, {
    url: `https://127.0.0.1:${port}/dir`,
    caFile,
    asked: () => asked,
    release: () => {
      for (const s of held.splice(0)) s.destroy();
    },
    close: async () => {
      for (const s of held.splice(0)) s.destroy();
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
      tls.cleanup();
    },
  });
}

describe('one issue or renewal of a certificate at a time, across processes', () => {
  let db: TestDatabase;
  let t: TestApp;
  let ca: Awaited<ReturnType<typeof holdingCa>>;
  let env: Record<string, string>;
  const children: ChildProcess[] = [];
  const call = (url: string, body: object) => t.app.inject({ method: 'POST', url, headers: { authorization: t.basic() }, payload: body });
  const lockFile = () => join(t.dataDir, 'certs-mail.lock');

  /** `mailsvc certs issue` in its own process, on the app's database and data dir; its exit awaited by `done`. */
  function cliIssue(): { child: ChildProcess; done: Promise<{ code: number | null; signal: NodeJS.Signals | null; stderr: string }> } {
    const child = spawn(process.execPath, [CLI_BIN, 'certs', 'issue'], { cwd: REPO_ROOT, env: { PATH: process.env.PATH ?? '/usr/bin:/bin', ...env }, stdio: ['ignore', 'ignore', 'pipe'] });
    children.push(child);
    let stderr = '';
    child.stderr?.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    return { child, done: new Promise((resolve) => child.on('close', (code, signal) => resolve({ code, signal, stderr }))) };
  }

  beforeAll(async () => {
    db = await createTestDatabase('sqlite');
    ca = await holdingCa();
    const common = { MAILSVC_MAIL_HOSTNAME: 'mail.example.org', MAILSVC_ACME_DIRECTORY_URL: ca.url, MAILSVC_ACME_CA_FILE: ca.caFile, MAILSVC_CERTS_DEPLOY: 'files' };
    t = await startTestApp(db.url, { MAILSVC_MFA_REQUIRED: 'no', ...common });
    // The CLI on the same database (its key: the one startTestApp derives from the URL) and the same data dir.
    env = {
      ...common,
      MAILSVC_DATA_DIR: t.dataDir,
      MAILSVC_CONFIG_FILE: join(t.dataDir, 'none.conf'),
      MAILSVC_DATABASE_URL: db.url,
      MAILSVC_SECRET_KEY: createHash('sha256').update(db.url).digest('base64'),
      MAILSVC_LOG_LEVEL: 'warn',
    };
  }, 60_000);
  afterAll(async () => {
    for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
    await ca?.close();
    await t?.close();
    await db?.drop();
  });

  it('while the CLI issues, the API refuses issue and renew with 409 and a second CLI exits 3, each naming it; after it ended, the API issues again', async () => {
    ca.mode = 'hold';
    const first = cliIssue();
    // It holds the lock and waits on the CA.
    await expect.poll(() => ca.asked() > 0 && existsSync(lockFile()), { timeout: 60_000, interval: 50 }).toBe(true);
    const holder = JSON.parse(readFileSync(lockFile(), 'utf8')) as { pid: number; what: string };
    expect(holder).toMatchObject({ pid: first.child.pid, what: 'the issue of certificate mail (mailsvc certs issue)' });

    const jobsBefore = (await t.ctx.db.selectFrom('jobs').select('id').where('kind', 'in', ['cert-issue', 'cert-renew']).execute()).length;
    const busy = new RegExp(`the issue of certificate mail \\(mailsvc certs issue\\) is running \\(pid ${first.child.pid}, since .*\\): one issue or renewal of a certificate at a time; wait for it to end`);
    const issue = await call('/admin/certs/issue', {});
    expect(issue.statusCode).toBe(409);
    expect(issue.json<{ detail: string }>().detail).toMatch(busy);
    const renew = await call('/admin/certs/renew', { force: true });
    expect(renew.statusCode).toBe(409);
    expect(renew.json<{ detail: string }>().detail).toMatch(busy);
    // Refused before a job was queued (the CLI's own job is the only one).
    expect((await t.ctx.db.selectFrom('jobs').select('id').where('kind', 'in', ['cert-issue', 'cert-renew']).execute()).length).toBe(jobsBefore);
    const second = await runCli(['certs', 'issue'], { env });
    expect(second.code).toBe(3);
    expect(expectOneErrorLine(second)).toMatch(busy);

    // The CA lets go: the first CLI's attempt fails (the CA cannot be reached, 69) and its lock is gone.
    ca.mode = 'reset';
    ca.release();
    const ended = await first.done;
    expect(ended.code, ended.stderr).toBe(69);
    expect(existsSync(lockFile())).toBe(false);
    const again = await call('/admin/certs/issue', {});
    expect(again.statusCode).toBe(202);
    const job = await jobEnd(t, again.json<{ job_id: string }>().job_id);
    expect(job).toMatchObject({ state: 'failed', result: { error: { code: 'unavailable' } } });
  }, 120_000);

  it('a lock left by a process that died (SIGKILL) does not block: the next issue removes it and runs', async () => {
    ca.mode = 'hold';
    const first = cliIssue();
    await expect.poll(() => ca.asked() > 0 && existsSync(lockFile()) && readFileSync(lockFile(), 'utf8').includes(`"pid":${first.child.pid}`), { timeout: 60_000, interval: 50 }).toBe(true);
    first.child.kill('SIGKILL');
    expect((await first.done).signal).toBe('SIGKILL');
    // Nothing removed it: the dead process's lock is still there.
    expect(JSON.parse(readFileSync(lockFile(), 'utf8'))).toMatchObject({ pid: first.child.pid });
    ca.mode = 'reset';
    ca.release();
    const next = await call('/admin/certs/issue', {});
    expect(next.statusCode).toBe(202);
    const job = await jobEnd(t, next.json<{ job_id: string }>().job_id);
    // The job ran (it reached the CA, which let it down), not refused as busy.
    expect(job).toMatchObject({ state: 'failed', result: { error: { code: 'unavailable' } } });
    expect(job.message).not.toMatch(/is running/);
    expect(existsSync(lockFile())).toBe(false);
    // And the CLI goes on likewise.
    const cli = await runCli(['certs', 'issue'], { env });
    expect(cli.code, cli.stderr).toBe(69);
  }, 120_000);
});
