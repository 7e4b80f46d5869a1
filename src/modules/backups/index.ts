import type { FastifyInstance } from 'fastify';
import { exec } from '../../adapters/exec.js';
import type { Infra } from '../../infra/index.js';
import type { JobRunner } from '../jobs/index.js';
import type { RouteKit } from '../route-types.js';
import { BackupService } from './backup.service.js';
import type { Progress } from './backup-run.js';
import { readVerify } from './manifest.js';
import { RemoteCopier } from './remote.js';
import { setBackupSettings, settingsView } from './settings-view.js';
import { BackupSettingsStore, sourcesOf, withStored } from './stored-settings.js';
import type { Settings } from '../../config/settings.js';
import type { BackupSetResult, BackupShow, RunBackupInput, VerifyReport } from './schema.js';
import { join } from 'node:path';
import { renderUnits, writeUnits } from './units.js';

export type { BackupService } from './backup.service.js';
export type { BackupShow, BackupRecord, VerifyReport } from './schema.js';

/** What the backups module needs of the limits module: the retention limit, read and written. */
export type RetentionLimit = { get(): Promise<number>; set(days: number): Promise<void> };

/** The newest backup's last verify, for /health/details (small, read from LOCAL_DIR). */
export type BackupHealth = { lastBackup(): { id: string; completed_at: string; verify_ok: boolean | null; verified_at: string | null } | null };

let tarVersion: Promise<string> | undefined;
const readTarVersion = (): Promise<string> => (tarVersion ??= exec('tar', ['--version']).then((r) => r.stdout.split('\n')[0] ?? 'tar', () => 'tar'));

/**
 * What `mailsvc restore` needs, built without opening the database: a refused
 * restore creates nothing (an SQLite file included); the database is opened
 * only to restore into it, after every check passed.
 */
export function createRestoreService(infra: Pick<Infra, 'settings' | 'db' | 'schema' | 'dialect' | 'rootHelper'>): BackupService {
  return new BackupService({
    settings: infra.settings,
    get db() {
      return infra.db;
    },
    get schema() {
      return infra.schema;
    },
    dialect: infra.dialect,
    redis: undefined,
    // Stopping Postfix intake: as root (the units, the CLI) in this process, else through the helper.
    helper: infra.rootHelper,
    retentionDays: () => Promise.resolve(infra.settings.backup.retentionDays),
    remote: null,
    tarVersion: readTarVersion,
  });
}

export function createBackupsModule(infra: Pick<Infra, 'settings' | 'db' | 'schema' | 'dialect' | 'redis' | 'helper' | 'rootHelper' | 'box' | 'log'>, deps: { retention: RetentionLimit; runner: JobRunner }) {
  const { settings } = infra;
  const store = new BackupSettingsStore(() => infra.db);
  /** The settings in force: the stored backup settings over the defaults, read from the database on every use (no restart). */
  const current = async (): Promise<Settings> => {
    const stored = await store.all();
    try {
      return { ...settings, backup: withStored(settings, stored) };
    } catch (err) {
      // A stored set this version refuses: the defaults hold, and the journal says why.
      infra.log.warn({ err: err instanceof Error ? err.message : String(err) }, 'the stored backup settings are refused; the defaults are used');
      return settings;
    }
  };
  const remote = new RemoteCopier(settings, () => infra.db, () => infra.box);
  const service = new BackupService({
    settings,
    get db() {
      return infra.db;
    },
    get schema() {
      return infra.schema;
    },
    dialect: infra.dialect,
    get redis() {
      return settings.redisUrl !== undefined ? infra.redis : undefined;
    },
    // Stopping Postfix intake: as root (the units, the CLI) in this process, else through the helper.
    helper: infra.rootHelper,
    retentionDays: async () => (await store.retention()) ?? (await deps.retention.get()),
    remote: (s, dir, id, progress, retention) => remote.upload(s.backup.remoteTargets, dir, id, progress, retention),
    checkRemote: (targets) => remote.check(targets),
    tarVersion: readTarVersion,
    current,
  });
  const toJob = (ctx: { progress(f: number, m: string): Promise<void> }): Progress => (f, m) => void ctx.progress(f, m).catch(() => undefined);
  // Root writes LOCAL_DIR: as root (the units, the CLI) or with the helper in this process (development, tests) the jobs run
  // here; the service (user mailsvc) queues them and has the helper start mailsvc-backup@<job>.service, which runs them as root.
  const inProcess = process.getuid?.() === 0 || settings.helper.endpoint.mode === 'direct';
  const elsewhere = (): Promise<never> => Promise.reject(new Error('a backup or verify job runs as root in mailsvc-backup@<job>.service (mailsvc backup run-job), never in the service'));
  deps.runner.register<RunBackupInput>('backup', (input, ctx) => (inProcess ? service.run({ full: input.full === true }, toJob(ctx), ctx.signal) : elsewhere()));
  deps.runner.register<Record<string, never>>('backup-verify', (_input, ctx) => (inProcess ? service.verify(toJob(ctx), ctx.signal) : elsewhere()));
  /** Starts a backup or verify job: in this process when it may write LOCAL_DIR, else queued and started as root through the helper. */
  const startJob = async (kind: 'backup' | 'backup-verify', input: RunBackupInput | Record<string, never>): Promise<string> => {
    if (inProcess) return deps.runner.start(kind, input);
    const id = await deps.runner.enqueue(kind, input);
    await infra.helper.run('mailsvc-job-start', ['backup', id]);
    return id;
  };

  const show = async (): Promise<BackupShow> => {
    // Backups are read from the manifests under LOCAL_DIR (root:mailsvc 0750): what a root run made is listed here at once.
    const last = service.list()[0] ?? null;
    const verified = service.manifests().map((m) => ({ m, v: readVerify(join(settings.backup.localDir, m.id)) })).find((x) => x.v !== null);
    const lastVerify: VerifyReport | null = verified?.v ? { backup: verified.m.id, chain: verified.m.chain, verified_at: verified.v.verified_at, ok: verified.v.verify_ok, problems: verified.v.problems } : null;
    const [stored, retained, now] = await Promise.all([store.all(), store.retention(), current()]);
    return { settings: settingsView(now.backup, retained ?? (await deps.retention.get())), sources: sourcesOf(settings, stored, retained !== null), last_backup: last, last_verify: lastVerify };
  };
  const set = (patch: Record<string, string>): Promise<BackupSetResult> => setBackupSettings(settings, store, patch, (d) => deps.retention.set(d), () => deps.retention.get(), Date.now());
  const health: BackupHealth = {
    lastBackup: () => {
      const last = service.list()[0];
      return last ? { id: last.id, completed_at: last.completed_at, verify_ok: last.verify_ok, verified_at: last.verified_at } : null;
    },
  };
  return {
    service,
    runner: deps.runner,
    show,
    set,
    health,
    remote,
    /** The root-only key that authenticates every manifest (backup show names it). */
    manifestKeyFile: settings.backup.manifestKeyFile,
    /** The systemd units from ONCALENDAR in force (a stored value included); written (and verified) into `dir` when given. */
    units: async (dir?: string) => {
      const onCalendar = (await current()).backup.onCalendar;
      return dir ? writeUnits(onCalendar, dir) : renderUnits(onCalendar);
    },
    routes: async (app: FastifyInstance, kit: RouteKit) => (await import('./routes.js')).backupRoutes(app, { service, startJob, show, set }, kit.hooks, kit.errors),
  };
}
export type BackupsModule = ReturnType<typeof createBackupsModule>;
