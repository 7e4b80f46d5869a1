import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { createScratchDatabase, restoreDatabase } from '../../adapters/db-dump/index.js';
import { checkPhysicalCopy } from '../../adapters/db-dump/physical.js';
import { extractArchive } from '../../adapters/tar/index.js';
import type { Manifest } from './manifest.js';
import type { ManifestKey } from './manifest-key.js';
import type { Settings } from '../../config/settings.js';
import type { DialectName } from '../../db/database.js';
import { compareCounts, countTables } from './db-snapshot.js';
import { extractChain, resolveChain } from './restore.js';
import type { Progress } from './backup-run.js';
import type { VerifyReport } from './schema.js';
import { treeStats } from './walk.js';

/**
 * Proves the chain ending at `dir` restores: every artifact's sha256, the mail
 * archives extracted into a scratch directory (its file count compared with
 * the manifest), the dump restored into a scratch database (a file for SQLite;
 * `<database>_verify_<random>` on the same server otherwise, dropped after) and
 * every table's rows compared with the manifest. Scratch space goes in any case.
 */
export async function verifyChain(settings: Settings, dialect: DialectName, dir: string, progress: Progress, signal: AbortSignal | undefined, key: ManifestKey | null): Promise<VerifyReport> {
  const problems: string[] = [];
  const started = new Date().toISOString();
  const scratch = mkdtempSync(join(settings.backup.localDir, '.verify-'));
  let chain: string[] = [];
  try {
    progress(0.05, 'checking the manifests\' HMAC and the sha256 of every artifact');
    let items;
    try {
      items = await resolveChain(dir, { key });
    } catch (err) {
      problems.push(err instanceof Error ? err.message.replace(/^refusing to restore, nothing was changed: /, '') : String(err));
    }
    if (items) {
      const last = items.at(-1)?.manifest;
      chain = items.map((i) => i.manifest.id);
      progress(0.3, 'extracting the mail into scratch space');
      await extractChain(items, join(scratch, 'mail'), undefined, signal);
      const restored = await treeStats(join(scratch, 'mail'));
      if (last && restored.files !== last.mail.files) problems.push(`the restored mail holds ${restored.files} files, the manifest says ${last.mail.files}`);
      progress(0.7, 'restoring the database into a scratch database');
      const item = items.at(-1);
      const dump = item?.manifest.artifacts.find((a) => a.kind === 'database');
      if (!item || !dump || !last) problems.push('the backup holds no database dump');
      else if (last.database.physical) {
        progress(0.7, `checking the physical copy (${last.database.physical.tool === 'pg_basebackup' ? 'pg_verifybackup' : 'mariabackup --prepare'})`);
        problems.push(...(await verifyPhysical(last, join(item.dir, dump.name), join(scratch, 'database'), signal)));
      } else {
        const target = dialect === 'sqlite' ? { url: `sqlite://${join(scratch, 'verify.db')}`, drop: () => Promise.resolve() } : await createScratchDatabase(settings, `verify_${process.pid}`);
        try {
          await restoreDatabase({ databaseUrl: target.url }, join(item.dir, dump.name), signal);
          problems.push(...compareCounts(last.database.tables, await countTables(target.url, dialect)));
        } finally {
          await target.drop();
        }
      }
    }
  } catch (err) {
    problems.push(`the restore into scratch space failed: ${err instanceof Error ? err.message : String(err)}`);
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
  const ok = problems.length === 0;
  progress(1, ok ? 'verified: the backup restores and matches its manifest' : `verify found ${problems.length} problem(s)`);
  return { backup: chain.at(-1) ?? null, chain, verified_at: started, ok, problems };
}

/**
 * A physical copy unpacked into scratch space: its file count against the
 * manifest, the tool's own check (pg_verifybackup: every file against the
 * backup manifest and the WAL; mariabackup --prepare: the redo log applied),
 * and on MariaDB every table of the manifest present in the prepared copy.
 */
async function verifyPhysical(m: Manifest, archive: string, dir: string, signal?: AbortSignal): Promise<string[]> {
  const info = m.database.physical;
  if (!info) return [];
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  await extractArchive({ file: archive, dir, compression: m.compression, signal });
  const problems: string[] = [];
  const files = (await treeStats(dir)).files;
  if (files !== info.files) problems.push(`the physical copy holds ${files} files, the manifest says ${info.files}`);
  problems.push(...(await checkPhysicalCopy(info, dir, signal)));
  if (info.tool === 'mariabackup' && problems.length === 0) {
    for (const t of Object.keys(m.database.tables)) if (!existsSync(join(dir, info.database, `${t}.frm`))) problems.push(`table ${t} is missing from the physical copy`);
  }
  return problems;
}
