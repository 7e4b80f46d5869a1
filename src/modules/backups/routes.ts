import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { AppError } from '../../shared/errors.js';
import { pageOf, PageQuery } from '../paging.schema.js';
import { ADMIN_SECURITY as security } from '../route-types.js';
import type { AdminHooks, RouteErrors } from '../route-types.js';
import { JobStartedSchema } from '../jobs/index.js';
import type { BackupService } from './backup.service.js';
import { BackupListSchema, BackupSetResultSchema, BackupSettingsPatch, BackupShowSchema, CalendarPreviewSchema, CalendarQuery, RunBackupBody } from './schema.js';
import { calendarPreview } from './settings-view.js';
import type { BackupSetResult, BackupShow } from './schema.js';

type Deps = {
  service: BackupService;
  /** Starts the job where it may write the backup directory (as root: through the helper's mailsvc-job-start when this process is not root). */
  startJob(kind: 'backup' | 'backup-verify', input: { full?: boolean } | Record<string, never>): Promise<string>;
  show(): Promise<BackupShow>;
  set(patch: Record<string, string>): Promise<BackupSetResult>;
};

/** /admin/backups: list, run (a job), settings, verify (a job). API-key scope `backups`. */
export function backupRoutes(app: FastifyInstance, d: Deps, hooks: AdminHooks, errors: RouteErrors): void {
  const r = app.withTypeProvider<TypeBoxTypeProvider>();
  const tags = ['backups'];
  const config = { scope: 'backups' as const };

  r.get('/admin/backups', {
    onRequest: hooks.admin,
    config,
    schema: {
      tags, security, querystring: Type.Object(PageQuery, { additionalProperties: false }),
      summary: 'Complete backups, newest first',
      description: 'Read from the manifests under MAILSVC_BACKUP_LOCAL_DIR (never from the database, so a restored database cannot forget backups). Each record names its type, its parent in the chain, its size and mail file count, and the result of its last verify.',
      response: { 200: BackupListSchema, ...errors(400, 401, 403, 422, 429) },
    },
    handler: (req) => {
      const page = pageOf(req.query);
      const all = d.service.list();
      return { items: all.slice(page.offset, page.offset + page.limit), total: all.length, ...page };
    },
  });

  r.post('/admin/backups', {
    onRequest: hooks.admin,
    config: { ...config, bodyOptional: true },
    schema: {
      tags, security, body: RunBackupBody,
      summary: 'Run a backup now (a job): 202 with the job id',
      description: 'Full or incremental as MAILSVC_BACKUP_TYPE says (or full with {"full": true}); the backup is checked against its manifest, copied to the remotes, and retention applied locally and on each remote once its copy there was checked. Follow it at GET /admin/jobs/{id}; its result is the backup record plus removed (local ids), remote (targets written), remote_removed (<target>/<id>) and warnings. 409 while another backup, verify or restore runs.',
      response: { 202: JobStartedSchema, ...errors(400, 401, 403, 409, 413, 422, 429) },
    },
    handler: async (req, reply) => {
      d.service.assertIdle();
      return reply.status(202).send({ job_id: await d.startJob('backup', { full: req.body?.full === true }) });
    },
  });

  r.get('/admin/backups/settings', {
    onRequest: hooks.admin,
    config,
    schema: {
      tags, security,
      summary: 'Backup settings, the last backup and the last verify',
      description: 'The backup settings in force, read from the database on every request (a value stored by any process wins over MAILSVC_BACKUP_* of the environment and the settings file; RETENTION_DAYS is the limit backup-retention-days), where each came from (`sources`: stored, environment, file, default), the newest complete backup, and the newest verify result with its problems.',
      response: { 200: BackupShowSchema, ...errors(401, 403, 429) },
    },
    handler: () => d.show(),
  });

  r.patch('/admin/backups/settings', {
    onRequest: hooks.admin,
    config,
    schema: {
      tags, security, body: BackupSettingsPatch,
      summary: 'Change backup settings: all or nothing, 422 naming a bad key or value',
      description: 'Keys are the MAILSVC_BACKUP_ suffixes (TYPE, RETENTION_DAYS, ONCALENDAR, …). Stored in the database, where every process reads it at once (it wins over the environment and the settings file); ONCALENDAR lines are checked with systemd-analyze calendar and take effect when the installer re-renders the timer (the answer says so). 422, nothing stored: a bad value, a remote that is not an rclone remote name, or a key root acts on (LOCAL_DIR, MANIFEST_KEY_FILE, CONFIG_PATHS, MAIL_STORAGE), named with the reason.',
      response: { 200: BackupSetResultSchema, ...errors(400, 401, 403, 409, 413, 422, 429) },
    },
    handler: (req) => d.set(Object.fromEntries(Object.entries(req.body).map(([k, v]) => [k, String(v)]))),
  });

  r.get('/admin/backups/calendar', {
    onRequest: hooks.admin,
    config,
    schema: {
      tags, security, querystring: CalendarQuery,
      summary: 'The next runs of OnCalendar expressions (systemd-analyze calendar)',
      description: 'For each expression (separated by ";" or new lines, at most 10), systemd\'s normalized form and its next runs in UTC, as `systemd-analyze calendar --iterations=N` computes them: what the backup timer would do with ONCALENDAR set so. Nothing is stored. 422 naming an expression systemd refuses; 503 when systemd-analyze is not installed.',
      response: { 200: CalendarPreviewSchema, ...errors(400, 401, 403, 422, 429, 503) },
    },
    handler: async (req) => {
      const lines = req.query.expression.split(/\r?\n|;/).map((l) => l.trim()).filter(Boolean);
      if (lines.length === 0 || lines.length > 10) throw new AppError('validation', 'expression: give 1 to 10 calendar expressions', { errors: [{ path: 'querystring.expression', message: 'give 1 to 10 calendar expressions' }] });
      return { expressions: await calendarPreview(lines, Number(req.query.iterations ?? 5)) };
    },
  });

  r.post('/admin/backups/verify', {
    onRequest: hooks.admin,
    config: { ...config, bodyOptional: true },
    schema: {
      tags, security,
      summary: 'Verify the newest backup chain (a job): 202 with the job id',
      description: 'Restores the newest chain into a scratch directory and a scratch database, checks every sha256 and compares row and file counts with the manifest. The job result is the report ({ok, problems}); the backup list then shows verify_ok. 404 when there is no backup, 409 while another run holds the lock.',
      response: { 202: JobStartedSchema, ...errors(401, 403, 404, 409, 429) },
    },
    handler: async (_req, reply) => {
      d.service.assertIdle();
      if (d.service.list().length === 0) throw new AppError('not_found', 'no backup to verify; run a backup first (POST /admin/backups)');
      return reply.status(202).send({ job_id: await d.startJob('backup-verify', {}) });
    },
  });
}
