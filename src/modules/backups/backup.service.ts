import { chmodSync, chownSync, copyFileSync, existsSync, mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type { Redis } from 'ioredis';
import type { HelperClient } from '../../adapters/helper-client.js';
import { restoreDatabase } from '../../adapters/db-dump/index.js';
import { loadSettings } from '../../config/settings.js';
import type { Settings } from '../../config/settings.js';
import { SettingsError } from '../../config/settings-error.js';
import type { Db, DialectName } from '../../db/database.js';
import { createDb } from '../../db/database.js';
import { dialectOf } from '../../db/dialect.js';
import type { Schema } from '../../db/migrate.js';
import { AppError } from '../../shared/errors.js';
import { writeBackup } from './backup-run.js';
import { checkConfigArchive, restoreConfig } from './config-restore.js';
import type { RecordedPaths } from './allow-list.js';
import { loadManifestKey } from './manifest-key.js';
import type { ManifestKey } from './manifest-key.js';
import { prepareLocalDir, shareReadOnly } from './local-dir.js';
import type { Progress } from './backup-run.js';
import { groupChains, retentionPlan } from './chain.js';
import { checkLock, takeLock } from '../../shared/file-lock.js';
import { MANIFEST, VERIFY_FILE, readManifest, readVerify } from './manifest.js';
import type { Manifest } from './manifest.js';
import { extractChain, resolveChain, swapIn } from './restore.js';
import { verifyChain } from './verify.js';
import { refuseDb } from './restore-refusals.js';

export { KeyMismatchRefused, PhysicalRestoreRefused } from './restore-refusals.js';
import { RestoreUnproven, proveRestored } from './restore-proof.js';
import type { BackupRecord, RestoreReport, VerifyReport } from './schema.js';

export type BackupDeps = {
  settings: Settings;
  db: Db;
  /** The schema this version needs: a restored database is migrated to it, and proved to have it. */
  schema: Pick<Schema, 'latest' | 'migrateToLatest'>;
  dialect: DialectName;
  redis: Redis | undefined;
  helper: HelperClient;
  /** Days backups are kept: the limit `backup-retention-days` (MAILSVC_BACKUP_RETENTION_DAYS by default). */
  retentionDays: () => Promise<number>;
  /** Copies a finished backup to the remote targets and applies retention there (null: none configured). */
  remote: ((settings: Settings, dir: string, id: string, progress: Progress, retention: { days: number; now: number }) => Promise<{ targets: string[]; removed: string[]; notes: string[] }>) | null;
  /** Refuses remote targets root would not send to (remote-policy.ts), before the run makes anything. */
  checkRemote?: (targets: readonly string[]) => Promise<void>;
  tarVersion: () => Promise<string>;
  now?: () => Date;
  /** The settings read again (after a restore put the settings file back); loadSettings by default. */
  reload?: () => Settings;
  /** The settings in force for a run (the stored backup settings over the defaults, read again each time); `settings` by default. */
  current?: () => Promise<Settings>;
};

/** How a restore authenticates the manifests: the saved key of another host, and whether unsigned (older) manifests are accepted. */
export type RestoreAuth = { manifestKey?: string; acceptUnsigned?: boolean; onUnsigned?: (ids: string[]) => void };

function shareKey(path: string): void {
  chmodSync(path, 0o600);
  chownSync(path, 0, 0);
}

const WEEKDAYS = ['Sun', 'Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat'];

export class BackupService {
  constructor(private readonly d: BackupDeps) {}

  get localDir(): string {
    return this.d.settings.backup.localDir;
  }
  private get dir(): string {
    return this.d.settings.backup.localDir;
  }
  private now(): Date {
    return this.d.now?.() ?? new Date();
  }

  /** Complete backups (a manifest, not `.tmp-`), newest first, read from LOCAL_DIR, never from the database. */
  manifests(): Manifest[] {
    if (!existsSync(this.dir)) return [];
    const out: Manifest[] = [];
    for (const name of readdirSync(this.dir)) {
      if (name.startsWith('.') || !existsSync(join(this.dir, name, MANIFEST))) continue;
      try {
        out.push(readManifest(join(this.dir, name)));
      } catch {
        // Not ours, or damaged: never listed, never restored from; verify reports damage of listed ones.
      }
    }
    return out.sort((a, b) => b.id.localeCompare(a.id));
  }

  record(m: Manifest): BackupRecord {
    const v = readVerify(join(this.dir, m.id));
    const size = m.artifacts.reduce((n, a) => n + a.size, 0);
    return { id: m.id, path: join(this.dir, m.id), type: m.type, parent: m.parent, created_at: m.created_at, completed_at: m.completed_at, size, files: m.mail.files, verified_at: v?.verified_at ?? null, verify_ok: v?.verify_ok ?? null };
  }

  list(): BackupRecord[] {
    return this.manifests().map((m) => this.record(m));
  }

  chains(): { full: string; backups: BackupRecord[] }[] {
    return groupChains(this.manifests()).map((c) => ({ full: c.full, backups: c.members.map((m) => this.record(m)) }));
  }

  /** Refuses at once (409 / exit 3) while another run holds the lock; used before a job is queued. */
  assertIdle(): void {
    checkLock(join(this.dir, '.lock'));
  }

  /** Where root writes the backups, checked (exit 78 when another user could write it or a parent). */
  prepareDir(): void {
    prepareLocalDir(this.dir);
  }

  private lock(what: string): () => void {
    prepareLocalDir(this.dir);
    const release = takeLock(join(this.dir, '.lock'), what);
    // Holding the lock, any `.tmp-` directory belongs to a run that died (SIGKILL, power loss): it never became a backup.
    for (const name of readdirSync(this.dir)) if (name.startsWith('.tmp-')) rmSync(join(this.dir, name), { recursive: true, force: true });
    return release;
  }

  /** The type this run makes: --full, TYPE=full, auto on FULL_WEEKDAY, or no complete chain to build on give a full. */
  private parentFor(full: boolean, s: Settings['backup']): Manifest | null {
    if (full || s.type === 'full') return null;
    if (s.type === 'auto' && WEEKDAYS[this.now().getDay()] === s.fullWeekday) {
      // One full per FULL_WEEKDAY: a second run that day builds on the full made earlier that day.
      const today = this.now().toISOString().slice(0, 10);
      const fullToday = this.manifests().find((m) => m.type === 'full' && m.created_at.slice(0, 10) === today);
      if (!fullToday) return null;
    }
    const all = this.manifests();
    const ids = new Set(all.map((m) => m.id));
    return all.find((m) => m.chain.every((id) => ids.has(id)) && existsSync(join(this.dir, m.id, 'mail.snar'))) ?? null;
  }

  async run(opts: { full?: boolean }, progress: Progress, signal?: AbortSignal): Promise<BackupRecord & { removed: string[]; remote: string[]; remote_removed: string[]; warnings: string[] }> {
    const release = this.lock(`backup run (started ${this.now().toISOString()})`);
    try {
      // The settings in force now: a value stored by any process since this one started is used.
      const settings = (await this.d.current?.()) ?? this.d.settings;
      if (this.d.remote && settings.backup.remoteTargets.length > 0) await this.d.checkRemote?.(settings.backup.remoteTargets);
      const parent = this.parentFor(opts.full === true, settings.backup);
      const m = await writeBackup({ settings, db: this.d.db, dialect: this.d.dialect, redis: settings.backup.includeRedis ? this.d.redis : undefined, tarVersion: await this.d.tarVersion() }, parent, this.now(), progress, signal);
      // Remote retention runs per target only after that target's copy of this backup was checked.
      const remote = this.d.remote && settings.backup.remoteTargets.length > 0 ? await this.d.remote(settings, join(this.dir, m.id), m.id, progress, { days: await this.d.retentionDays(), now: this.now().getTime() }) : { targets: [], removed: [], notes: [] };
      const removed = await this.applyRetention();
      progress(1, `backup ${m.id} complete`);
      return { ...this.record(m), removed, remote: remote.targets, remote_removed: remote.removed, warnings: [...m.warnings, ...remote.notes] };
    } finally {
      release();
    }
  }

  /** Removes what retention lets go (never the newest complete chain, never a full a kept incremental needs). */
  async applyRetention(): Promise<string[]> {
    const plan = retentionPlan(this.manifests(), await this.d.retentionDays(), this.now().getTime());
    for (const id of plan.remove) rmSync(join(this.dir, id), { recursive: true, force: true });
    return plan.remove;
  }

  async verify(progress: Progress, signal?: AbortSignal): Promise<VerifyReport> {
    const newest = this.manifests()[0];
    if (!newest) throw new AppError('not_found', `no backup in ${this.dir} to verify; run mailsvc backup run first`);
    const release = this.lock(`backup verify of ${newest.id}`);
    try {
      let key: ManifestKey | null = null;
      let keyProblem: string | null = null;
      try {
        key = loadManifestKey(this.d.settings.backup.manifestKeyFile, { create: false });
      } catch (err) {
        keyProblem = err instanceof Error ? err.message : String(err);
      }
      const report = await verifyChain(this.d.settings, this.d.dialect, join(this.dir, newest.id), progress, signal, key);
      if (keyProblem) report.problems.unshift(keyProblem);
      const file = join(this.dir, newest.id, VERIFY_FILE);
      writeFileSync(file, JSON.stringify({ verified_at: report.verified_at, verify_ok: report.ok, problems: report.problems }) + '\n', { mode: 0o600 });
      shareReadOnly(file);
      return report;
    } finally {
      release();
    }
  }

  /** Stops Postfix intake through the helper; a Postfix that is not installed or not running is skipped and reported. */
  private async postfix(verb: 'stop' | 'start', steps: string[]): Promise<boolean> {
    try {
      const status = await this.d.helper.run('postfix-status', []);
      const running = status.code === 0;
      if (verb === 'stop' && !running) return void steps.push('postfix: not running, intake was already stopped (skipped)'), false;
      if (verb === 'start' && running) return void steps.push('postfix: already running'), false;
      await this.d.helper.run(`postfix-${verb}`, []);
      steps.push(verb === 'stop' ? 'postfix: stopped (no mail accepted during the restore)' : 'postfix: started again');
      return true;
    } catch (err) {
      steps.push(`postfix: ${verb} skipped (${err instanceof Error ? err.message : String(err)})`);
      return false;
    }
  }

  /**
   * Restores the chain ending at `source`: every backup checked against its
   * manifest first (nothing changes on a broken chain or a mismatch), Postfix
   * stopped, the mail storage staged and swapped in, the database restored
   * and migrated, Postfix started again.
   */
  async restore(source: string, what: { files: boolean; db: boolean; config?: boolean }, progress: Progress, signal?: AbortSignal, auth: RestoreAuth = {}): Promise<RestoreReport> {
    // The key first: a manifest is authenticated before anything else of the backup is read.
    const given = auth.manifestKey !== undefined;
    const key = given ? loadManifestKey(auth.manifestKey ?? '', { create: false, strict: false }) : loadManifestKey(this.d.settings.backup.manifestKeyFile, { create: false });
    if (given && !key) throw new AppError('validation', `refusing to restore, nothing was changed: --manifest-key ${auth.manifestKey ?? ''} does not exist`);
    // A refusal changes nothing: LOCAL_DIR (and the lock in it) is made only once every check passed; an existing one is locked at once.
    let release = existsSync(this.dir) ? this.lock(`restore from ${source}`) : null;
    const steps: string[] = [];
    try {
      progress(0, 'checking the chain against its manifests');
      const items = await resolveChain(source, { deferMail: what.files, key, acceptUnsigned: auth.acceptUnsigned === true, rootOwned: process.getuid?.() === 0 });
      const unsigned = items.filter((i) => i.unsigned).map((i) => i.manifest.id);
      if (unsigned.length > 0) {
        auth.onUnsigned?.(unsigned);
        steps.push(`WARNING: restored from unsigned manifest(s) (--accept-unsigned): ${unsigned.join(', ')}`);
      }
      const last = items.at(-1)?.manifest;
      const lastItem = items.at(-1);
      if (!last || !lastItem) throw new AppError('validation', 'the chain is empty');
      steps.push(`checked ${items.length} backup(s): ${items.map((i) => i.manifest.id).join(' → ')}`);
      // Every refusal comes before anything changes.
      const configTar = last.artifacts.find((a) => a.kind === 'config');
      if (what.config && !configTar) throw new AppError('validation', `refusing to restore, nothing was changed: ${last.id} holds no configuration (config.tar)`);
      const dump = last.artifacts.find((a) => a.kind === 'database');
      if (what.db && !dump) throw new AppError('validation', `refusing to restore, nothing was changed: ${last.id} holds no database dump`);
      const recorded: RecordedPaths = { settingsFile: last.config.settings_file ?? last.config.paths[0], keyFile: last.config.key_file ?? last.config.paths.find((p) => p.endsWith('/secret.key')) };
      // config.tar judged member by member against the allow-list before anything changes.
      if (what.config && configTar) checkConfigArchive(this.d.settings, join(lastItem.dir, configTar.name), recorded);
      if (what.db) refuseDb(this.d.settings, last, lastItem.dir, what.config === true);
      // Without the configuration the database goes where this host's settings say: its dialect is known now.
      if (what.db && !what.config && last.database.dialect !== this.d.dialect) throw new AppError('validation', `refusing to restore, nothing was changed: the backup holds a ${last.database.dialect} dump; MAILSVC_DATABASE_URL is ${this.d.dialect}`);
      release ??= this.lock(`restore from ${source}`);
      const stopped = await this.postfix('stop', steps);
      let aside: string | null = null;
      let migrated: string[] = [];
      // What the next start reads: the settings again once the configuration came back (MAILSVC_CONFIG_FILE, MAILSVC_DATA_DIR of this host).
      let after = this.d.settings;
      try {
        if (what.config && configTar) {
          progress(0.05, 'putting the configuration back');
          steps.push(...(await restoreConfig(this.d.settings, join(lastItem.dir, configTar.name), join(this.dir, `.config-restore-${last.id}`), recorded)));
          after = this.reload();
        }
        if (what.files) {
          const storage = this.d.settings.backup.mailStorage;
          const staged = `${storage}.restoring-${last.id}`;
          progress(0.1, 'extracting the mail storage');
          await extractChain(items, staged, undefined, signal);
          aside = swapIn(staged, storage, this.now().toISOString().replace(/[:.]/g, '-'));
          steps.push(`mail storage ${storage} restored from ${items.length} archive(s)${aside ? `; the previous one was kept as ${aside}` : ''}`);
        }
        if (what.db && dump) {
          progress(0.7, 'restoring the database');
          const url = after.databaseUrl;
          if (last.database.dialect !== dialectOf(url)) throw new AppError('validation', `the backup holds a ${last.database.dialect} dump; the restored settings name a ${dialectOf(url)} database (MAILSVC_DATABASE_URL): set MAILSVC_DATABASE_URL to a ${last.database.dialect} database and run the restore again`);
          await restoreDatabase({ databaseUrl: url }, join(lastItem.dir, dump.name), signal);
          const db = createDb(url);
          try {
            migrated = await this.d.schema.migrateToLatest(db);
          } finally {
            await db.destroy();
          }
          steps.push(`database restored (${Object.keys(last.database.tables).length} tables); migrations applied: ${migrated.length === 0 ? 'none needed' : migrated.join(', ')}`);
        }
      } finally {
        if (stopped) await this.postfix('start', steps);
      }
      // A fresh host restored with the saved key keeps it: its next backups are signed with the same key.
      const keyFile = after.backup.manifestKeyFile;
      if (given && key && !existsSync(keyFile) && process.getuid?.() === 0) {
        mkdirSync(dirname(keyFile), { recursive: true, mode: 0o750 });
        copyFileSync(key.path, keyFile);
        shareKey(keyFile);
        steps.push(`the manifest key was installed at ${keyFile}`);
      }
      // "Complete" only once the result opens as the next start will open it.
      if (what.db || what.config) {
        progress(0.95, 'proving the restored host opens');
        const proof = await proveRestored(after, this.d.schema);
        steps.push(...proof.steps);
        if (proof.problems.length > 0) throw new RestoreUnproven(proof.problems, steps);
      }
      progress(1, 'restore complete');
      return { source, chain: items.map((i) => i.manifest.id), restored_files: what.files, restored_db: what.db, restored_config: what.config === true, migrations_applied: migrated, previous_mail_storage: aside, steps };
    } finally {
      release?.();
    }
  }

  /** The settings as the next command reads them (the restored settings file at MAILSVC_CONFIG_FILE). */
  private reload(): Settings {
    try {
      return (this.d.reload ?? loadSettings)();
    } catch (err) {
      const why = err instanceof SettingsError ? err.message : err instanceof Error ? err.message : String(err);
      throw new RestoreUnproven([`the restored settings file ${this.d.settings.configFile} is refused: ${why}`], ['the configuration was put back']);
    }
  }
}
