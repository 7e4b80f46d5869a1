import { existsSync, mkdirSync, readFileSync, statSync, chmodSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { writeFileAtomic } from './fs-atomic.js';
import { SecretBox } from './secret-box.js';
import { KeyFileMissing } from './key-file-missing.js';

/** What the key needs of the settings. */
export type KeySettings = { dataDir: string; secretKey: string | undefined; secretKeyPrevious: readonly string[] };

export const keyFilePath = (settings: Pick<KeySettings, 'dataDir'>): string => join(settings.dataDir, 'secret.key');

/** Key file lines: the primary key first, then keys kept to open older values. */
export function readKeyFile(path: string): Buffer[] {
  return readFileSync(path, 'utf8')
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '' && !l.startsWith('#'))
    .map((l) => Buffer.from(l, 'base64'))
    .filter((b) => b.length === 32);
}

export function writeKeyFile(path: string, keys: Buffer[]): void {
  mkdirSync(dirname(path), { recursive: true });
  writeFileAtomic(path, keys.map((k) => k.toString('base64')).join('\n') + '\n', 0o600);
}

export { KeyFileMissing };

/**
 * The secret box of this process: MAILSVC_SECRET_KEY when set, otherwise the
 * key file under the data dir, generated with mode 0600 on first start.
 */
export function loadSecretBox(settings: KeySettings, opts: { create?: boolean } = { create: true }): SecretBox {
  const previous = settings.secretKeyPrevious.map((k) => Buffer.from(k, 'base64'));
  if (settings.secretKey !== undefined) {
    return new SecretBox(Buffer.from(settings.secretKey, 'base64'), previous);
  }
  const path = keyFilePath(settings);
  if (!existsSync(path)) {
    // Only the service makes the key (on its first start); a host command never
    // invents one, which would seal new secrets under a key the service does not have.
    if (opts.create === false) throw new KeyFileMissing(path);
    writeKeyFile(path, [randomBytes(32)]);
  }
  if ((statSync(path).mode & 0o077) !== 0) chmodSync(path, 0o600);
  const [primary, ...older] = readKeyFile(path);
  if (!primary) throw new Error(`${path} holds no 32-byte base64 key; restore it from a backup`);
  return new SecretBox(primary, [...older, ...previous]);
}
