import { copyFileSync, existsSync, fsyncSync, closeSync, openSync, mkdirSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join, sep } from 'node:path';
import type { Redis } from 'ioredis';
import { archiveSuffix, createArchive, createPlainArchive } from '../../adapters/tar/index.js';
import type { Settings } from '../../config/settings.js';
import { restoreAllowList } from '../../config/backup-settings.js';
import type { Db, DialectName } from '../../db/database.js';
import { appliedSchema } from '../../db/migrate.js';
import { AppError } from '../../shared/errors.js';
import { SERVICE_VERSION } from '../../shared/version.js';
import { physicalCopy } from '../../adapters/db-dump/physical.js';
import { loadSecretBox, keyFilePath } from '../../shared/secret-key-file.js';
import { countTables, dumpWithCounts } from './db-snapshot.js';
import { MANIFEST, checkArtifacts, sha256File } from './manifest.js';
import { MANIFEST_SIG, loadManifestKey, signManifest } from './manifest-key.js';
import { prepareLocalDir, shareReadOnly } from './local-dir.js';
import type { Artifact, Manifest } from './manifest.js';
import { copyRedisSnapshot } from './redis-snapshot.js';
import { formatBytes, treeStats } from './walk.js';

export type Progress = (fraction: number, message: string) => void;

export type RunDeps = { settings: Settings; db: Db; dialect: DialectName; redis: Redis | undefined; tarVersion: string };

const pad = (n: number, w = 2): string => String(n).padStart(w, '0');
/** `20261123-154428-123-full`: sorts in time order, readable, safe as a directory name. */
export function backupId(now: Date, type: Manifest['type']): string {
  const d = now;
  return `${d.getUTCFullYear()}${pad(d.getUTCMonth() + 1)}${pad(d.getUTCDate())}-${pad(d.getUTCHours())}${pad(d.getUTCMinutes())}${pad(d.getUTCSeconds())}-${pad(d.getUTCMilliseconds(), 3)}-${type === 'full' ? 'full' : 'incr'}`;
}

const dumpName = (dialect: DialectName): string => (dialect === 'sqlite' ? 'database.sqlite' : dialect === 'postgres' ? 'database.pgdump' : 'database.sql');

function fsyncPath(path: string): void {
  const fd = openSync(path, 'r');
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

/**
 * Which key sealed the database's secrets (the id SecretBox writes into each
 * sealed value), and whether the backup's config.tar holds it: the key file
 * does, MAILSVC_SECRET_KEY from the environment does not. A restore compares
 * it with the host's key before it puts a database back.
 */
export function secretKeyInfo(settings: Settings): NonNullable<Manifest['secrets']> {
  try {
    const box = loadSecretBox(settings, { create: false });
    return { key_id: box.keyId, key_file_in_backup: settings.secretKey === undefined && existsSync(keyFilePath(settings)) };
  } catch {
    return { key_id: null, key_file_in_backup: false };
  }
}

const within = (path: string, dir: string): boolean => path === dir || path.startsWith(dir === '/' ? dir : dir + sep);

/**
 * What config.tar holds: the settings file, the key file, and those of
 * CONFIG_PATHS that exist and lie in the restore allow-list (the daemon files
 * mailsvc renders); any other path is skipped (a restore would refuse it).
 */
export function configToArchive(settings: Settings): { archived: string[]; skipped: string[] } {
  const roots = restoreAllowList(settings.helper);
  const [conf = '', keyFile = '', ...rest] = settings.backup.configPaths;
  const ok = rest.filter((p) => roots.some((r) => (r.kind === 'dir' ? within(p, r.path) : p === r.path)));
  return { archived: [conf, keyFile, ...ok].filter((p) => existsSync(p)), skipped: rest.filter((p) => !ok.includes(p) && existsSync(p)) };
}

/**
 * Writes one backup into `<LOCAL_DIR>/.tmp-<id>`, checks every artifact
 * against the manifest it just wrote, and only then renames the directory to
 * `<LOCAL_DIR>/<id>`: a backup directory without the `.tmp-` prefix is always
 * complete. `parent` is the newest complete backup to build an incremental on,
 * or null for a full.
 */
export async function writeBackup(deps: RunDeps, parent: Manifest | null, now: Date, progress: Progress, signal?: AbortSignal): Promise<Manifest> {
  const s = deps.settings.backup;
  const type: Manifest['type'] = parent ? 'incremental' : 'full';
  const id = backupId(now, type);
  const tmp = join(s.localDir, `.tmp-${id}`);
  const final = join(s.localDir, id);
  if (!existsSync(s.mailStorage) || !statSync(s.mailStorage).isDirectory()) {
    throw new AppError('bad_request', `the mail storage ${s.mailStorage} does not exist; set MAILSVC_MAIL_STORAGE to Dovecot's mail location`);
  }
  prepareLocalDir(s.localDir);
  // Made before anything else: a host without a key gets one (root-only), and a bad key stops the run before it copies anything.
  const key = loadManifestKey(s.manifestKeyFile, { create: true });
  if (!key) throw new AppError('internal', `cannot make the backup manifest key ${s.manifestKeyFile}`);
  mkdirSync(tmp, { recursive: true, mode: 0o700 });
  const timings: Record<string, number> = {};
  const artifacts: Artifact[] = [];
  const warnings: string[] = [];
  const t0 = Date.now();
  try {
    // Mail first: it is the bulk of the time, so it gets 0..0.85 of the progress.
    progress(0, 'counting the mail storage');
    const tree = await treeStats(s.mailStorage);
    const snapshot = join(tmp, 'mail.snar');
    if (parent) copyFileSync(join(s.localDir, parent.id, 'mail.snar'), snapshot);
    const mailFile = `mail${archiveSuffix(s.compression)}`;
    let lastReport = 0;
    const mail = await createArchive({
      dir: s.mailStorage,
      file: join(tmp, mailFile),
      snapshot,
      compression: s.compression,
      signal,
      onProgress: (p) => {
        if (Date.now() - lastReport < 1000) return;
        lastReport = Date.now();
        progress(0.85 * Math.min(1, tree.tarBytes === 0 ? 1 : p.bytes / tree.tarBytes), `mail: ${formatBytes(Math.min(p.bytes, tree.tarBytes))} of ${formatBytes(tree.tarBytes)}, ${p.files} of ${tree.files} files`);
      },
    });
    if (mail.changedWhileRead.length > 0) warnings.push(`${mail.changedWhileRead.length} mail files changed or vanished while they were read (a live mailbox); the archive holds each as tar found it`);
    artifacts.push({ name: mailFile, kind: 'mail', size: mail.size, sha256: mail.sha256 });
    artifacts.push({ name: 'mail.snar', kind: 'snapshot', size: statSync(snapshot).size, sha256: await sha256File(snapshot) });
    timings.mail = Date.now() - t0;

    const t1 = Date.now();
    let tables: Record<string, number>;
    let physical: Manifest['database']['physical'];
    if (s.dbMode === 'physical' && deps.dialect !== 'sqlite') {
      // pg_basebackup / mariabackup into a staging directory, archived as one artifact; the rows per table are
      // counted just before the copy (the copy is of a live server: verify checks it with the tool, not by counts).
      progress(0.86, `copying the database server (${deps.dialect === 'postgres' ? 'pg_basebackup' : 'mariabackup'})`);
      tables = await countTables(deps.settings.databaseUrl, deps.dialect);
      const stage = join(tmp, 'database-physical');
      const info = await physicalCopy({ databaseUrl: deps.settings.databaseUrl }, stage, signal);
      const staged = await treeStats(stage);
      const name = `database-physical${archiveSuffix(s.compression)}`;
      const snar = join(tmp, '.database-physical.snar');
      const a = await createArchive({ dir: stage, file: join(tmp, name), snapshot: snar, compression: s.compression, signal });
      rmSync(stage, { recursive: true, force: true });
      rmSync(snar, { force: true });
      artifacts.push({ name, kind: 'database', size: a.size, sha256: a.sha256 });
      physical = { ...info, files: staged.files, bytes: staged.bytes };
    } else {
      // SQLite: the online backup API is a page copy already, so DB_MODE=physical makes the same file as logical.
      progress(0.86, 'dumping the database');
      const dump = join(tmp, dumpName(deps.dialect));
      tables = await dumpWithCounts(deps.settings.databaseUrl, deps.dialect, deps.db, dump, signal);
      artifacts.push({ name: dumpName(deps.dialect), kind: 'database', size: statSync(dump).size, sha256: await sha256File(dump) });
    }
    timings.database = Date.now() - t1;
    const schema = await appliedSchema(deps.db).catch(() => null);

    progress(0.9, 'copying the configuration');
    const { archived: configPaths, skipped } = configToArchive(deps.settings);
    for (const p of skipped) warnings.push(`${p} (MAILSVC_BACKUP_CONFIG_PATHS) was not archived: a restore puts back only the settings file, the key file and the daemon files mailsvc renders`);
    if (configPaths.length > 0) {
      const conf = await createPlainArchive({ paths: configPaths, file: join(tmp, 'config.tar'), compression: 'none' });
      artifacts.push({ name: 'config.tar', kind: 'config', size: conf.size, sha256: conf.sha256 });
    }

    if (s.includeRedis) {
      progress(0.92, 'saving Redis (BGSAVE)');
      if (!deps.redis) throw new AppError('bad_request', 'MAILSVC_BACKUP_INCLUDE_REDIS=yes needs MAILSVC_REDIS_URL');
      const rdb = join(tmp, 'redis.rdb');
      await copyRedisSnapshot(deps.redis, rdb, signal);
      artifacts.push({ name: 'redis.rdb', kind: 'redis', size: statSync(rdb).size, sha256: await sha256File(rdb) });
    }

    const manifest: Manifest = {
      format: 1,
      id,
      type,
      parent: parent?.id ?? null,
      chain: [...(parent?.chain ?? []), id],
      created_at: now.toISOString(),
      completed_at: new Date().toISOString(),
      versions: { mailsvc: SERVICE_VERSION, tar: deps.tarVersion },
      compression: s.compression,
      mail: { root: s.mailStorage, files: tree.files, bytes: tree.bytes, changed_while_read: mail.changedWhileRead.length },
      database: { dialect: deps.dialect, mode: s.dbMode, schema, tables, ...(physical ? { physical } : {}) },
      secrets: secretKeyInfo(deps.settings),
      redis: { included: s.includeRedis },
      config: { paths: configPaths, settings_file: deps.settings.configFile, key_file: keyFilePath(deps.settings) },
      artifacts,
      timings_ms: { ...timings, total: Date.now() - t0 },
      warnings,
    };
    const bytes = Buffer.from(JSON.stringify(manifest, null, 2) + '\n');
    writeFileSync(join(tmp, MANIFEST), bytes, { mode: 0o600 });
    writeFileSync(join(tmp, MANIFEST_SIG), signManifest(bytes, key), { mode: 0o600 });
    progress(0.95, 'checking the backup against its manifest');
    for (const a of [...artifacts.map((x) => x.name), MANIFEST, MANIFEST_SIG]) {
      shareReadOnly(join(tmp, a));
      fsyncPath(join(tmp, a));
    }
    shareReadOnly(tmp);
    const problems = await checkArtifacts(tmp, manifest);
    if (problems.length > 0) throw new Error(`the backup does not match its own manifest: ${problems.join('; ')}`);
    renameSync(tmp, final);
    fsyncPath(s.localDir);
    return manifest;
  } catch (err) {
    rmSync(tmp, { recursive: true, force: true });
    if (err instanceof Error && /ENOSPC/.test(err.message + String((err as NodeJS.ErrnoException).code))) {
      throw new AppError('internal', `no space left in ${s.localDir}: the partial backup was removed, earlier backups are untouched; free space or move MAILSVC_BACKUP_LOCAL_DIR`);
    }
    throw err;
  }
}
