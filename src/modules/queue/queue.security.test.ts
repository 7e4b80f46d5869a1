import { helperConfig } from '../../../test/helpers/helper-config.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { startTestApp } from '../../../test/helpers/app.js';
import type { TestApp } from '../../../test/helpers/app.js';
import { createTestDatabase } from '../../../test/helpers/dialects.js';
import type { TestDatabase } from '../../../test/helpers/dialects.js';
import { call } from '../../../test/helpers/flows.js';
import { DirectHelperClient, HelperRunner } from '../../helper/runner.js';
import { HelperError } from '../../adapters/helper-client.js';
import { QUEUE_ID_BATCH, QueueIdError, parseQueueId } from '../../shared/queue-id.js';

// An id that is not a Postfix queue id never reaches a program: `postsuper -d ALL` empties the
// whole queue, `-d -` reads ids from stdin, an option changes what postsuper does. Stand-in
// postsuper and postqueue programs first on PATH record every run, so "nothing ran" is checked.
const VALID = ['4B0A6210E3F', 'ABCDEF', '9F6E0210E45ABCDEF', '4MfZ2x0Lq9zJx5', '4MfZ2x0Lq9z1', '4jZtSR4MzmzJMGf'];
const INVALID = [
  'ALL', 'all', '-', '-d', '--', '-c/etc', '4B0A6210E3F ', ' 4B0A6210E3F', '4B0A6210E3F\n', '4B0A6210E3F\0', '4b0a6210e3f',
  'ABCDE', '../../etc/passwd', '4B0A6210E3F,ALL', '4B0A6210E3F;rm -rf /', '$(touch /tmp/x)', 'aeiouAEIOUzxx', '4MfZ2x0Lq9z', 'z4MfZ2x0Lq9',
  '4MfZ2x0Lq9zJx5z', 'ＡＢＣＤＥＦ１', 'A'.repeat(41), '',
];

const dir = mkdtempSync(join(tmpdir(), 'mailsvc-queue-sec-'));
const ranFile = join(dir, 'ran');
for (const program of ['postsuper', 'postqueue']) {
  const path = join(dir, program);
  writeFileSync(path, `#!/bin/sh\necho "${program} $*" >> "${ranFile}"\necho "postsuper: Deleted: 1 message" >&2\n`);
  chmodSync(path, 0o755);
}
const ran = (): string[] => (existsSync(ranFile) ? readFileSync(ranFile, 'utf8').trim().split('\n') : []);
const savedPath = process.env.PATH;

describe('queue ids: only short and long Postfix queue ids pass', () => {
  it('accepts short (hex) and long (enable_long_queue_ids) ids unchanged', () => {
    for (const id of VALID) expect(parseQueueId(id)).toBe(id);
  });
  it('refuses everything else, quickly even for a megabyte of input', () => {
    for (const id of INVALID) expect(() => parseQueueId(id), JSON.stringify(id)).toThrow(QueueIdError);
    const started = performance.now();
    expect(() => parseQueueId('A'.repeat(1024 * 1024))).toThrow(QueueIdError);
    expect(() => parseQueueId(`${'0123456789BCDFGH'.repeat(65536)}z`)).toThrow(QueueIdError);
    expect(performance.now() - started).toBeLessThan(200);
  });
});

describe('the postsuper helper actions validate every id before anything runs', () => {
  const helper = new DirectHelperClient(
    new HelperRunner(helperConfig({ doveadm: 'doveadm', dovecotConfig: undefined, postfixConfigDir: '/etc/postfix-test', fail2banSocket: '/run/f.sock', fail2banConfigDir: '/etc/fail2ban' }), pino({ level: 'silent' })),
  );
  beforeAll(() => {
    process.env.PATH = `${dir}:${savedPath ?? ''}`;
  });
  afterAll(() => {
    process.env.PATH = savedPath;
  });

  it('refuses a bad id, alone or in a list, and too many ids; nothing runs', async () => {
    const before = ran().length;
    for (const action of ['postsuper-hold', 'postsuper-release', 'postsuper-delete', 'postsuper-expire']) {
      for (const ids of [...INVALID, '4B0A6210E3F,', ',4B0A6210E3F', Array(QUEUE_ID_BATCH + 1).fill('4B0A6210E3F').join(',')]) {
        const err = await helper.run(action, [ids]).catch((e: unknown) => e);
        expect(err, `${action} ${JSON.stringify(ids.slice(0, 40))}`).toBeInstanceOf(HelperError);
        expect((err as HelperError).kind).toBe('refused');
      }
      expect((await helper.run(action, []).catch((e: unknown) => e)) as HelperError).toMatchObject({ kind: 'refused' });
      expect((await helper.run(action, ['4B0A6210E3F', 'hold']).catch((e: unknown) => e)) as HelperError).toMatchObject({ kind: 'refused' });
    }
    expect(ran().length).toBe(before);
  });

  it('runs postsuper -c <its own config dir> with one flag per valid id, as separate arguments', async () => {
    await helper.run('postsuper-delete', ['4B0A6210E3F,4MfZ2x0Lq9zJx5']);
    await helper.run('postsuper-hold', ['4B0A6210E3F']);
    await helper.run('postsuper-release', ['4B0A6210E3F']);
    await helper.run('postsuper-expire', ['4B0A6210E3F']);
    expect(ran().slice(-4)).toEqual([
      'postsuper -c /etc/postfix-test -d 4B0A6210E3F -d 4MfZ2x0Lq9zJx5',
      'postsuper -c /etc/postfix-test -h 4B0A6210E3F',
      'postsuper -c /etc/postfix-test -H 4B0A6210E3F',
      'postsuper -c /etc/postfix-test -f 4B0A6210E3F',
    ]);
  });
});

describe('the queue API refuses bad ids and unfiltered bulk deletes before any program runs', () => {
  let db: TestDatabase;
  let t: TestApp;
  beforeAll(async () => {
    process.env.PATH = `${dir}:${savedPath ?? ''}`;
    db = await createTestDatabase('sqlite');
    t = await startTestApp(db.url, { MAILSVC_MFA_REQUIRED: 'no', MAILSVC_HELPER: 'direct', MAILSVC_POSTFIX_CONFIG_DIR: '/etc/postfix-test' });
  });
  afterAll(async () => {
    process.env.PATH = savedPath;
    await t?.close();
    await db?.drop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('answers 422 naming queue_id for every bad id on hold, release and delete; nothing runs', async () => {
    const before = ran().length;
    for (const id of ['ALL', '-d', '4b0a6210e3f', 'ABCDE', '4B0A6210E3F,ABCDEF', '%2E%2E%2Fetc', 'A'.repeat(60)]) {
      for (const [method, url] of [['POST', `/admin/queue/${id}/hold`], ['POST', `/admin/queue/${id}/release`], ['DELETE', `/admin/queue/${id}`], ['DELETE', `/admin/queue/${id}?bounce=true`]] as const) {
        const r = await call(t, method, url, t.basic());
        expect(r.status, `${method} ${url}`).toBe(422);
        expect(String(r.body.detail)).toMatch(/queue_id|id/);
      }
    }
    expect(ran().length).toBe(before);
  });

  it('a bulk delete needs a filter, and bad filter values are 422; nothing runs', async () => {
    const before = ran().length;
    for (const q of ['', '?dry_run=true', '?bounce=true', '?older_than=2x', '?older_than=-1', '?queue=corrupt', '?sender=a%20b', '?sender=', '?dry_run=yes']) {
      const r = await call(t, 'DELETE', `/admin/queue${q}`, t.basic());
      expect(r.status, q).toBe(422);
    }
    expect(ran().length).toBe(before);
  });

  it('an API key needs the queue scope to change the queue (read reaches the list); a refused key runs nothing', async () => {
    const key = async (scopes: string[]) => {
      const r = await call(t, 'POST', '/auth/api-keys', t.basic(), { name: scopes.join('-'), scopes, expires_at: new Date(Date.now() + 86_400_000).toISOString() });
      expect(r.status).toBe(201);
      return `Bearer ${String(r.body.key)}`;
    };
    const [read, accounts, queue] = [await key(['read']), await key(['accounts']), await key(['queue'])];
    const before = ran().length;
    for (const k of [read, accounts]) {
      expect((await call(t, 'DELETE', '/admin/queue/4B0A6210E3F', k)).status).toBe(403);
      expect((await call(t, 'POST', '/admin/queue/4B0A6210E3F/hold', k)).status).toBe(403);
      expect((await call(t, 'DELETE', '/admin/queue?sender=a@b.test', k)).status).toBe(403);
    }
    expect(ran().length).toBe(before);
    expect(await call(t, 'GET', '/admin/queue', read)).toMatchObject({ status: 200, body: { total: 0 } });
    expect(await call(t, 'DELETE', '/admin/queue/4B0A6210E3F', queue)).toMatchObject({ status: 200, body: { action: 'deleted' } });
    expect(ran().slice(-1)).toEqual(['postsuper -c /etc/postfix-test -d 4B0A6210E3F']);
  });

  it('the queue routes need the administrator; nothing runs without', async () => {
    const before = ran().length;
    for (const [method, url] of [['GET', '/admin/queue'], ['POST', '/admin/queue/4B0A6210E3F/hold'], ['DELETE', '/admin/queue/4B0A6210E3F'], ['DELETE', '/admin/queue?sender=a@b.test']] as const) {
      expect((await t.app.inject({ method, url })).statusCode).toBe(401);
    }
    expect(ran().length).toBe(before);
  });
});
