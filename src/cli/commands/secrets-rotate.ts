import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { loadSettings } from '../../config/settings.js';
import { createDb } from '../../db/database.js';
import { migrateToLatest } from '../../app/schema.js';
import { resealAll } from '../../modules/secrets/index.js';
import { SecretBox } from '../../shared/secret-box.js';
import { keyFilePath, loadSecretBox, readKeyFile, writeKeyFile } from '../../shared/secret-key-file.js';
import { CliError, output } from '../output.js';


/** `mailsvc secrets rotate-key`: loaded only when it runs (it opens the database). */
export async function rotateKey(opts: { json?: boolean; dropOld?: boolean }): Promise<void> {
  const settings = loadSettings();
  const db = createDb(settings.databaseUrl);
  try {
    await migrateToLatest(db);
    if (settings.secretKey !== undefined) {
      // The key lives in the environment: the operator sets the new one there and
      // lists the old one in MAILSVC_SECRET_KEY_PREVIOUS; this re-seals everything.
      const result = await resealAll(db, loadSecretBox(settings));
      output(opts.json, { ...result, key_source: 'environment' }, () =>
        `Re-encrypted ${result.resealed} secret(s) under key ${result.key_id} from MAILSVC_SECRET_KEY. ` +
        'You can now remove MAILSVC_SECRET_KEY_PREVIOUS.',
      );
      return;
    }
    const path = keyFilePath(settings);
    if (!existsSync(path)) throw new CliError(`no key file at ${path}: start the service once, or set MAILSVC_SECRET_KEY`, 78);
    const old = readKeyFile(path);
    // Keys listed in MAILSVC_SECRET_KEY_PREVIOUS open values too, as they do in the service.
    const previous = settings.secretKeyPrevious.map((k) => Buffer.from(k, 'base64'));
    if (opts.dropOld) {
      const [primary, ...older] = old;
      if (!primary) throw new CliError(`${path} holds no key; restore it from a backup`, 78);
      const result = await resealAll(db, new SecretBox(primary, [...older, ...previous]));
      writeKeyFile(path, [primary]);
      output(opts.json, { ...result, key_source: path, dropped_keys: older.length }, () =>
        `${result.resealed} secret(s) re-encrypted under key ${result.key_id}; ${older.length} old key(s) removed from ${path}.`,
      );
      return;
    }
    const fresh = randomBytes(32);
    // The new key goes first while the old ones stay, so every value opens at every moment.
    writeKeyFile(path, [fresh, ...old]);
    const result = await resealAll(db, new SecretBox(fresh, [...old, ...previous]));
    // The old keys stay in the file: a service still running on the old key may
    // seal new values with it until it is restarted, and those must still open.
    output(opts.json, { ...result, key_source: path }, () =>
      `New key ${result.key_id} written to ${path}; ${result.resealed} secret(s) re-encrypted.\n` +
      'Restart the service to load it, then run mailsvc secrets rotate-key --drop-old to remove the old key.',
    );
  } finally {
    await db.destroy();
  }
}
