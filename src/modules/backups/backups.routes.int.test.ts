import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createTestDatabase } from '../../../test/helpers/dialects.js';
import type { TestDatabase } from '../../../test/helpers/dialects.js';
import { startTestApp } from '../../../test/helpers/app.js';
import type { TestApp } from '../../../test/helpers/app.js';
import { call } from '../../../test/helpers/flows.js';
import { makeMailStorage } from '../../../test/helpers/backups.js';

describe('backups over HTTP (jobs: 202 + /admin/jobs/{id})', () => {
  let db: TestDatabase;
  let t: TestApp;
  let dir: string;
  beforeEach(async () => {
    db = await createTestDatabase('sqlite');
    dir = mkdtempSync(join(tmpdir(), 'mailsvc-backup-api-'));
    makeMailStorage(join(dir, 'vmail'), 2, 8);
    t = await startTestApp(db.url, { MAILSVC_MFA_REQUIRED: 'no', MAILSVC_MAIL_STORAGE: join(dir, 'vmail'), MAILSVC_BACKUP_LOCAL_DIR: join(dir, 'backups'), MAILSVC_BACKUP_CONFIG_PATHS: join(dir, 'none'), MAILSVC_HELPER: 'direct' });
  });
  afterEach(async () => {
    await t?.close();
    await db?.drop();
    rmSync(dir, { recursive: true, force: true });
  });
  const job = async (id: string) => {
    await expect.poll(async () => (await call(t, 'GET', `/admin/jobs/${id}`, t.basic())).body.state, { timeout: 60_000, interval: 50 }).toMatch(/succeeded|failed/);
    return (await call(t, 'GET', `/admin/jobs/${id}`, t.basic())).body;
  };

  it('run, list, verify, settings; /health/details shows the last verify', async () => {
    expect((await call(t, 'POST', '/admin/backups/verify', t.basic())).status).toBe(404);
    const started = await call(t, 'POST', '/admin/backups', t.basic(), { full: true });
    expect(started.status).toBe(202);
    const done = await job(String(started.body.job_id));
    expect(done).toMatchObject({ kind: 'backup', state: 'succeeded', progress: 1, result: { type: 'full', files: 18, parent: null } });
    const list = await call(t, 'GET', '/admin/backups', t.basic());
    expect(list.body).toMatchObject({ total: 1, items: [{ id: (done.result as { id: string }).id, verify_ok: null }] });

    const v = await call(t, 'POST', '/admin/backups/verify', t.basic());
    expect(v.status).toBe(202);
    expect(await job(String(v.body.job_id))).toMatchObject({ kind: 'backup-verify', state: 'succeeded', result: { ok: true, problems: [] } });
    const health = await call(t, 'GET', '/health/details', t.basic());
    expect(health.body).toMatchObject({ backups: { last_backup: (done.result as { id: string }).id, verify_ok: true } });
    // A good verify does not degrade it (a daemon of the host down here may: only components then).
    expect((health.body.degraded_by as string[]).filter((r) => !r.startsWith('component '))).toEqual([]);

    const settings = await call(t, 'GET', '/admin/backups/settings', t.basic());
    expect(settings.body).toMatchObject({ settings: { TYPE: 'auto', FULL_WEEKDAY: 'Sun', COMPRESSION: 'gzip', RETENTION_DAYS: 14, STORAGE_TYPE: 'local' }, last_verify: { ok: true } });

    const bad = await call(t, 'PATCH', '/admin/backups/settings', t.basic(), { COMPRESSION: 'rar' });
    expect(bad).toMatchObject({ status: 422, body: { detail: expect.stringContaining('MAILSVC_BACKUP_COMPRESSION') } });
    const badCal = await call(t, 'PATCH', '/admin/backups/settings', t.basic(), { ONCALENDAR: 'every full moon' });
    expect(badCal).toMatchObject({ status: 422, body: { detail: expect.stringContaining('not a systemd calendar expression') } });
    expect((await call(t, 'PATCH', '/admin/backups/settings', t.basic(), { NOPE: 'x' })).status).toBe(422);
    const ok = await call(t, 'PATCH', '/admin/backups/settings', t.basic(), { ONCALENDAR: '*-*-* 01:00:00;Sat 12:00', RETENTION_DAYS: 30 });
    expect(ok).toMatchObject({ status: 200, body: { changed: ['ONCALENDAR', 'RETENTION_DAYS'], settings: { RETENTION_DAYS: 30, ONCALENDAR: '*-*-* 01:00:00\nSat 12:00' } } });
    expect(String(ok.body.next_step)).toContain('re-render the timer');
    expect(readFileSync(t.settings.configFile, 'utf8')).toContain('MAILSVC_BACKUP_ONCALENDAR=*-*-* 01:00:00;Sat 12:00');
    expect((await call(t, 'GET', '/admin/limits', t.basic())).body).toMatchObject({ 'backup-retention-days': 30 });
    expect(readFileSync(t.settings.configFile, 'utf8')).not.toContain('COMPRESSION');
  }, 120_000);
});
