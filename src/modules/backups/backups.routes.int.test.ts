import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createTestDatabase } from '../../../test/helpers/dialects.js';
import type { TestDatabase } from '../../../test/helpers/dialects.js';
import { startTestApp } from '../../../test/helpers/app.js';
import type { TestApp } from '../../../test/helpers/app.js';
import { call } from '../../../test/helpers/flows.js';
import { makeMailStorage } from '../../../test/helpers/backups.js';
import { findProgram } from '../../../test/helpers/mail-daemons.js';
import { expectOk, json, runCli } from '../../../test/helpers/cli.js';

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
    // A fixed choice is an enum of the schema: 422 at the key, naming the values.
    expect(bad).toMatchObject({ status: 422, body: { errors: [{ path: 'body.COMPRESSION', message: 'must be one of gzip, zstd, none' }] } });
    const badType = await call(t, 'PATCH', '/admin/backups/settings', t.basic(), { INCLUDE_REDIS: 'maybe' });
    expect(badType).toMatchObject({ status: 422, body: { errors: [{ path: 'body.INCLUDE_REDIS', message: 'must be one of yes, no' }] } });
    // The next runs, as systemd computes them; nothing stored.
    const preview = await call(t, 'GET', `/admin/backups/calendar?expression=${encodeURIComponent('*-*-* 02:30:00;Sat 12:00')}&iterations=3`, t.basic());
    if (findProgram('systemd-analyze')) {
      expect(preview.status).toBe(200);
      const [daily, saturday] = (preview.body as { expressions: { expression: string; normalized: string; next: string[] }[] }).expressions;
      expect(daily).toMatchObject({ expression: '*-*-* 02:30:00', normalized: '*-*-* 02:30:00' });
      expect(daily!.next).toHaveLength(3);
      for (const [i, at] of daily!.next.entries()) {
        expect(at).toMatch(/^\d{4}-\d{2}-\d{2}T02:30:00Z$/);
        if (i > 0) expect(Date.parse(at) - Date.parse(daily!.next[i - 1]!)).toBe(86_400_000);
      }
      expect(Date.parse(daily!.next[0]!)).toBeGreaterThan(Date.now());
      expect(saturday!.normalized).toBe('Sat *-*-* 12:00:00');
      for (const at of saturday!.next) expect(new Date(at).getUTCDay()).toBe(6);
      const refused = await call(t, 'GET', `/admin/backups/calendar?expression=${encodeURIComponent('every full moon')}`, t.basic());
      expect(refused).toMatchObject({ status: 422, body: { errors: [{ path: 'querystring.expression' }] } });
    } else {
      console.log('NOTICE: systemd-analyze is not installed: only the 503 of the calendar preview is checked');
      expect(process.env.MAILSVC_TEST_REQUIRE_SERVICES, 'systemd-analyze is required').not.toBe('1');
      expect(preview.status).toBe(503);
    }
    const badCal = await call(t, 'PATCH', '/admin/backups/settings', t.basic(), { ONCALENDAR: 'every full moon' });
    expect(badCal).toMatchObject({ status: 422, body: { detail: expect.stringContaining('not a systemd calendar expression') } });
    expect((await call(t, 'PATCH', '/admin/backups/settings', t.basic(), { NOPE: 'x' })).status).toBe(422);
    const ok = await call(t, 'PATCH', '/admin/backups/settings', t.basic(), { ONCALENDAR: '*-*-* 01:00:00;Sat 12:00', RETENTION_DAYS: 30 });
    expect(ok).toMatchObject({ status: 200, body: { changed: ['ONCALENDAR', 'RETENTION_DAYS'], settings: { RETENTION_DAYS: 30, ONCALENDAR: '*-*-* 01:00:00\nSat 12:00' } } });
    expect(String(ok.body.next_step)).toContain('takes effect when the timer unit is re-rendered');
    expect(ok.body.sources).toMatchObject({ ONCALENDAR: 'stored', RETENTION_DAYS: 'stored', COMPRESSION: 'default' });
    // Stored in the database, never in the settings file (the service cannot write /etc/mailsvc in production).
    expect(existsSync(t.settings.configFile) ? readFileSync(t.settings.configFile, 'utf8') : '').not.toContain('ONCALENDAR');
    expect((await call(t, 'GET', '/admin/limits', t.basic())).body).toMatchObject({ 'backup-retention-days': 30 });
  }, 120_000);

  /** The CLI as another process on the same host and database as the running API. */
  const cli = (args: string[]) =>
    runCli(args, {
      env: { MAILSVC_DATA_DIR: t.dataDir, MAILSVC_DATABASE_URL: db.url, MAILSVC_SECRET_KEY: String(t.settings.secretKey), MAILSVC_MAIL_STORAGE: join(dir, 'vmail'), MAILSVC_BACKUP_LOCAL_DIR: join(dir, 'backups'), MAILSVC_BACKUP_CONFIG_PATHS: join(dir, 'none'), MAILSVC_HELPER: 'direct' },
      timeoutMs: 120_000,
    });

  it('one place: a value set by the CLI is what the running API shows (stored, no restart), a PATCH is what the CLI shows, a hostile remote or a root path is 422 with nothing stored', async () => {
    expect((await call(t, 'GET', '/admin/backups/settings', t.basic())).body).toMatchObject({ settings: { RETENTION_DAYS: 14, TYPE: 'auto' }, sources: { RETENTION_DAYS: 'default', TYPE: 'default', LOCAL_DIR: 'default' } });
    expectOk(await cli(['backup', 'set', 'RETENTION_DAYS', '3']));
    // The API that was running before the change shows it on its next request.
    expect((await call(t, 'GET', '/admin/backups/settings', t.basic())).body).toMatchObject({ settings: { RETENTION_DAYS: 3 }, sources: { RETENTION_DAYS: 'stored' } });

    expect(await call(t, 'PATCH', '/admin/backups/settings', t.basic(), { TYPE: 'full', COMPRESSION: 'none' })).toMatchObject({ status: 200, body: { sources: { TYPE: 'stored', COMPRESSION: 'stored' } } });
    const shown = json(await cli(['backup', 'show', '--json']));
    expect(shown).toMatchObject({ settings: { TYPE: 'full', COMPRESSION: 'none', RETENTION_DAYS: 3 }, sources: { TYPE: 'stored', COMPRESSION: 'stored', RETENTION_DAYS: 'stored', FULL_WEEKDAY: 'default' } });

    const before = (await call(t, 'GET', '/admin/backups/settings', t.basic())).body;
    const hostile: Record<string, string>[] = [
      { STORAGE_REMOTE_NAME: '/etc/cron.d' },
      { STORAGE_TYPE: 'remote', STORAGE_REMOTE_NAME: '../../root' },
      { REMOTE_TARGETS: '/etc/cron.d' },
      { REMOTE_TARGETS: ':local:/etc/cron.d' },
      { REMOTE_TARGETS: 'ok:backups -etc:x' },
      { STORAGE_TYPE: 'remote', REMOTE_TARGETS: 'good:x', TYPE: 'nope' },
    ];
    for (const body of hostile) {
      const r = await call(t, 'PATCH', '/admin/backups/settings', t.basic(), body);
      expect(r.status, JSON.stringify(body)).toBe(422);
    }
    for (const [key, reason] of [['LOCAL_DIR', 'root writes the backups'], ['MANIFEST_KEY_FILE', 'authenticates every manifest'], ['CONFIG_PATHS', 'root archives'], ['MAIL_STORAGE', 'root backs up']] as const) {
      const r = await call(t, 'PATCH', '/admin/backups/settings', t.basic(), { [key]: '/tmp/x' });
      expect(r, key).toMatchObject({ status: 422, body: { detail: expect.stringContaining(reason) } });
    }
    const viaCli = await cli(['backup', 'set', 'STORAGE_REMOTE_NAME', '/etc/cron.d']);
    expect(viaCli.code).not.toBe(0);
    expect(viaCli.stderr).toContain('not an rclone remote name');
    expect(await cli(['backup', 'set', 'LOCAL_DIR', '/x'])).toMatchObject({ code: 2 });
    expect((await call(t, 'GET', '/admin/backups/settings', t.basic())).body).toEqual(before);
  }, 180_000);

  it('a backup a root `backup run` made (another process) is listed by the running API and /health/details at once', async () => {
    expect((await call(t, 'GET', '/admin/backups', t.basic())).body).toMatchObject({ total: 0 });
    const made = json(await cli(['backup', 'run', '--full', '--json']));
    expect((await call(t, 'GET', '/admin/backups', t.basic())).body).toMatchObject({ total: 1, items: [{ id: made.id }] });
    expect((await call(t, 'GET', '/health/details', t.basic())).body).toMatchObject({ backups: { last_backup: made.id } });
    expect((await call(t, 'GET', '/admin/backups/settings', t.basic())).body).toMatchObject({ last_backup: { id: made.id } });
  }, 180_000);
});
