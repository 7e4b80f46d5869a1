import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildCli, expectOk, expectOneErrorLine, runCli } from '../../../test/helpers/cli.js';

/**
 * `mailsvc-update@<job>` and `mailsvc-backup@<job>` run as root on a job row
 * that the service user writes (the database is the service's). A row of
 * another kind, planted by a compromised service, must never run in them:
 * each root entry point runs only the kinds it exists for.
 */
describe('root job units run only their own kind of job', () => {
  let dir: string;
  let env: Record<string, string>;
  const plant = (kind: string): string => {
    const id = randomBytes(8).toString('hex');
    const db = new Database(join(dir, 'mailsvc.db'));
    try {
      db.prepare("INSERT INTO jobs (id, kind, input, created_at, state, progress, message) VALUES (?, ?, '{}', ?, 'queued', 0, 'queued')").run(id, kind, Date.now());
    } finally {
      db.close();
    }
    return id;
  };
  const state = (id: string): string => {
    const db = new Database(join(dir, 'mailsvc.db'), { readonly: true });
    try {
      return (db.prepare('SELECT state FROM jobs WHERE id = ?').get(id) as { state: string }).state;
    } finally {
      db.close();
    }
  };
  beforeAll(async () => {
    buildCli();
    dir = mkdtempSync(join(tmpdir(), 'mailsvc-root-jobs-'));
    env = { MAILSVC_DATA_DIR: dir, MAILSVC_SECRET_KEY: randomBytes(32).toString('base64'), MAILSVC_HELPER: 'direct' };
    expectOk(await runCli(['db', 'migrate'], { env }));
  }, 60_000);
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it.each([
    [['settings', 'apply-update', '--job'], 'sample', /is a sample job, not an update/],
    [['settings', 'apply-update', '--job'], 'backup', /is a backup job, not an update/],
    [['backup', 'run-job'], 'sample', /is a sample job, not a backup or verify/],
    [['backup', 'run-job'], 'update.apply', /not a backup or verify/],
  ])('%j refuses a planted %s job (exit 2) and leaves it queued', async (argv, kind, says) => {
    const id = plant(kind);
    const r = await runCli([...argv, id], { env, timeoutMs: 60_000 });
    expect(r.code, r.stderr).toBe(2);
    expect(expectOneErrorLine(r)).toMatch(says);
    expect(state(id)).toBe('queued');
  });
});
