import { existsSync, mkdirSync, renameSync, rmSync, statSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { extractArchive } from '../../adapters/tar/index.js';
import { AppError } from '../../shared/errors.js';
import { checkArtifacts, sha256File } from './manifest.js';
import type { Manifest } from './manifest.js';
import { readSignedManifest } from './manifest-key.js';
import { UnsafeBackupDir, writableByOthers } from './local-dir.js';
import type { ManifestKey } from './manifest-key.js';

export type ChainItem = { dir: string; manifest: Manifest; unsigned: boolean };
/** `rootOwned`: refuse a chain another user could have written (a restore as root; see refuseShared). */
export type ChainOptions = { deferMail?: boolean; key: ManifestKey | null; acceptUnsigned?: boolean; rootOwned?: boolean };

const ID = /^[0-9A-Za-z][0-9A-Za-z._-]{0,99}$/;

/**
 * The chain a restore of `source` needs, each backup's manifest authenticated
 * (its HMAC under `key`, before anything else of it is read) and checked
 * against its files (every artifact present, same size, same sha256) before
 * anything is touched. A missing link or any mismatch throws, listing every
 * problem; a manifest that is unsigned (unless `acceptUnsigned`), edited or
 * signed with another key throws at once.
 */
export async function resolveChain(source: string, opts: ChainOptions): Promise<ChainItem[]> {
  const dir = resolve(source);
  if (!existsSync(join(dir, 'manifest.json'))) throw new AppError('not_found', `${dir} holds no manifest.json: give a backup directory that \`backup list\` shows`);
  let last: Manifest;
  let lastUnsigned: boolean;
  try {
    ({ manifest: last, unsigned: lastUnsigned } = readSignedManifest(dir, opts.key, opts.acceptUnsigned));
  } catch (err) {
    if (err instanceof AppError) throw err;
    throw new AppError('validation', `cannot read the manifest of ${dir}: ${err instanceof Error ? err.message : String(err)}`);
  }
  const problems: string[] = [];
  const items: ChainItem[] = [];
  for (const id of last.chain) {
    if (typeof id !== 'string' || !ID.test(id)) throw new AppError('validation', `refusing to restore, nothing was changed: the manifest of ${dir} names a backup ${JSON.stringify(String(id).slice(0, 60))} that is not a backup id`);
    const d = id === last.id ? dir : join(dirname(dir), id);
    if (!existsSync(join(d, 'manifest.json'))) {
      problems.push(`the chain is broken: ${id} (${id === last.chain[0] ? 'its full backup' : 'an incremental it needs'}) is missing from ${dirname(dir)}`);
      continue;
    }
    try {
      const r = d === dir ? { manifest: last, unsigned: lastUnsigned } : readSignedManifest(d, opts.key, opts.acceptUnsigned);
      if (r.manifest.id !== id) problems.push(`${d} holds backup ${r.manifest.id}, not ${id}`);
      else items.push({ dir: d, ...r });
    } catch (err) {
      if (err instanceof AppError) throw err;
      problems.push(`${d}: ${err instanceof Error ? err.message : String(err)}`);
    }
  }
  if (opts.rootOwned) refuseShared(dir, items.map((i) => i.dir));
  // deferMail: the mail archives (the bulk) are only checked for presence and size here; extractChain
  // hashes them as it reads them into staging, so the live storage is still untouched when one differs.
  for (const item of items) problems.push(...(await checkArtifacts(item.dir, item.manifest, undefined, opts.deferMail ? ['mail'] : [])));
  if (problems.length > 0) throw new AppError('validation', `refusing to restore, nothing was changed: ${problems.join('; ')}`);
  return items;
}

/**
 * Extracts the mail archives of a chain, oldest first, into `target` (made
 * empty; a staging directory, never the live storage), checking each
 * archive's sha256 against its manifest as it is read. A mismatch (or an
 * archive too damaged to extract) removes the staging and refuses.
 */
export async function extractChain(items: ChainItem[], target: string, onBytes?: (n: number) => void, signal?: AbortSignal): Promise<void> {
  rmSync(target, { recursive: true, force: true });
  mkdirSync(target, { recursive: true, mode: 0o700 });
  try {
    for (const { dir, manifest } of items) {
      const mail = manifest.artifacts.find((a) => a.kind === 'mail');
      if (!mail) throw new AppError('validation', `${manifest.id} has no mail archive in its manifest`);
      const refuse = new AppError('validation', `refusing to restore, nothing was changed: ${manifest.id}/${mail.name} does not match its sha256 in the manifest`);
      let got: string;
      try {
        got = (await extractArchive({ file: join(dir, mail.name), dir: target, compression: manifest.compression, onBytes, signal })).sha256;
      } catch (err) {
        if ((await sha256File(join(dir, mail.name))) !== mail.sha256) throw refuse;
        throw err;
      }
      if (got !== mail.sha256) throw refuse;
    }
  } catch (err) {
    rmSync(target, { recursive: true, force: true });
    throw err;
  }
}

/**
 * Puts a restored tree in place of the mail storage: the current storage is
 * renamed aside to `<storage>.before-restore-<stamp>` (nothing is deleted; the
 * administrator removes it once satisfied), then the restored tree is renamed in.
 * The restored tree is staged next to the storage so both renames stay on one filesystem.
 */
export function swapIn(staged: string, storage: string, stamp: string): string | null {
  let aside: string | null = null;
  if (existsSync(storage)) {
    aside = `${storage}.before-restore-${stamp}`;
    renameSync(storage, aside);
  }
  try {
    renameSync(staged, storage);
  } catch (err) {
    if (aside) renameSync(aside, storage);
    throw err;
  }
  // tar restored the archived root's mode and times onto the staged directory itself.
  statSync(storage);
  return aside;
}

/**
 * Replay: a manifest's HMAC proves root made a backup, not when, nor that it
 * is the one root would pick. A restore as root therefore takes a chain only
 * from directories no other user could write: the directory holding the
 * chain, each backup directory and its manifest. Otherwise the service user
 * could have placed an old signed backup there.
 */
function refuseShared(source: string, dirs: string[]): void {
  const paths = [dirname(source), ...dirs.flatMap((d) => [d, join(d, 'manifest.json')])];
  for (const p of paths) {
    const who = writableByOthers(p, p === dirname(source));
    if (who === null) continue;
    throw new UnsafeBackupDir(
      `refusing to restore, nothing was changed: ${p} is ${who}, so another user could have placed an old signed backup there (a manifest's signature proves root made it, not that it is the one to restore); as root, copy the chain (${dirs.map((d) => basename(d)).join(', ')}) into a directory only root can write, e.g. mkdir -m 700 /root/restore && cp -a ${dirs.join(' ')} /root/restore/ && chown -R root:root /root/restore, check it is the backup you mean, and restore with --source /root/restore/${basename(source)}`,
    );
  }
}
