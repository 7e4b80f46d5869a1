import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { closeSync, constants, existsSync, fstatSync, mkdirSync, openSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { AppError } from '../../shared/errors.js';
import { MANIFEST, parseManifest } from './manifest.js';
import type { Manifest } from './manifest.js';

/** Beside manifest.json: `hmac-sha256 <key id> <hex>`, the HMAC of manifest.json's exact bytes (which hold every artifact's sha256). */
export const MANIFEST_SIG = 'manifest.hmac';

export type ManifestKey = { key: Buffer; id: string; path: string };

const REFUSE = 'refusing to restore, nothing was changed: ';

/** A short public name of a key (never the key): which key signed a manifest. */
export const keyId = (key: Buffer): string => createHash('sha256').update('mailsvc backup manifest key\n').update(key).digest('hex').slice(0, 16);

/**
 * The manifest key at `path`: 32 random bytes, base64, one line. Made (0600)
 * when `create` and there is none; null when there is none otherwise. A root
 * process reads only a regular file (never through a link) that root owns and
 * no one else can read or write.
 */
export function loadManifestKey(path: string, opts: { create: boolean; strict?: boolean }): ManifestKey | null {
  if (!existsSync(path)) {
    if (!opts.create) return null;
    mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
    try {
      writeFileSync(path, `${randomBytes(32).toString('base64')}\n`, { mode: 0o600, flag: 'wx' });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    }
  }
  let fd: number;
  try {
    fd = openSync(path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch (err) {
    throw new AppError('validation', `cannot open the backup manifest key ${path} (${(err as NodeJS.ErrnoException).code ?? 'error'}): it must be a regular file, not a link`);
  }
  let text: string;
  try {
    const st = fstatSync(fd);
    if (!st.isFile() || st.size > 4096) throw new AppError('validation', `the backup manifest key ${path} is not a small regular file`);
    if ((opts.strict ?? process.getuid?.() === 0) && (st.uid !== 0 || (st.mode & 0o077) !== 0)) {
      throw new AppError('validation', `the backup manifest key ${path} must be owned by root with mode 0600 (it is ${st.uid}, ${(st.mode & 0o777).toString(8)}): chown root:root ${path} && chmod 600 ${path}`);
    }
    text = readFileSync(fd, 'utf8').trim();
  } finally {
    closeSync(fd);
  }
  const key = Buffer.from(text, 'base64');
  if (key.length !== 32) throw new AppError('validation', `the backup manifest key ${path} is not the base64 of 32 bytes`);
  return { key, id: keyId(key), path };
}

const hmac = (key: Buffer, bytes: Buffer): Buffer => createHmac('sha256', key).update(bytes).digest();

/** The signature line for manifest.json's bytes. */
export const signManifest = (bytes: Buffer, k: ManifestKey): string => `hmac-sha256 ${k.id} ${hmac(k.key, bytes).toString('hex')}\n`;

export type SignedRead = { manifest: Manifest; unsigned: boolean };

/**
 * The manifest of backup directory `dir`, authenticated before a byte of it
 * is used: its HMAC under `key` must match its exact bytes. An unsigned one
 * (made before manifests were signed, or planted) is refused unless
 * `acceptUnsigned`; an edited one, or one signed with another key, always.
 */
export function readSignedManifest(dir: string, key: ManifestKey | null, acceptUnsigned = false): SignedRead {
  const bytes = readFileSync(join(dir, MANIFEST));
  const sigPath = join(dir, MANIFEST_SIG);
  if (!existsSync(sigPath)) {
    if (!acceptUnsigned) {
      throw new AppError('validation', `${REFUSE}${dir} has an unsigned manifest (no ${MANIFEST_SIG}): a backup made before mailsvc signed its manifests, or one planted there. If you made it yourself and know its files were never writable by anyone else, run the restore again with --accept-unsigned; otherwise make a new backup`);
    }
    return { manifest: parseManifest(bytes.toString('utf8'), join(dir, MANIFEST)), unsigned: true };
  }
  if (!key) throw new AppError('validation', `${REFUSE}this host has no backup manifest key to check ${dir} with: give the key saved from the host the backup was made on: --manifest-key FILE`);
  const m = /^hmac-sha256 ([0-9a-f]{16}) ([0-9a-f]{64})\n?$/.exec(readFileSync(sigPath, 'utf8').slice(0, 200));
  if (!m) throw new AppError('validation', `${REFUSE}${join(dir, MANIFEST_SIG)} is not a manifest signature: the backup was tampered with; restore another backup`);
  if (m[1] !== key.id) throw new AppError('validation', `${REFUSE}the manifest of ${dir} is signed with another key (key ${m[1] ?? ''}; ${key.path} is key ${key.id}): give the key saved from the host the backup was made on: --manifest-key FILE`);
  if (!timingSafeEqual(hmac(key.key, bytes), Buffer.from(m[2] ?? '', 'hex'))) {
    throw new AppError('validation', `${REFUSE}the manifest of ${dir} was changed after it was written (its HMAC does not match): the backup was tampered with; restore another backup`);
  }
  return { manifest: parseManifest(bytes.toString('utf8'), join(dir, MANIFEST)), unsigned: false };
}
