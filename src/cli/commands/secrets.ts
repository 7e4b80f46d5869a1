import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import type { Command } from 'commander';
import { loadSettings } from '../../config/settings.js';
import { createDb } from '../../db/database.js';
import { migrateToLatest } from '../../db/migrate.js';
import { resealAll } from '../../modules/secrets/rotation.service.js';
import { SecretBox } from '../../shared/secret-box.js';
import { keyFilePath, loadSecretBox, readKeyFile, writeKeyFile } from '../../shared/secret-key-file.js';
import { CliError, output } from '../output.js';

export function secretsCommands(program: Command): void {
  program
    .command('secrets')
    .description('the key that encrypts stored secrets')
    .command('rotate-key')
    .description('make a new key and re-encrypt every stored secret under it (with MAILSVC_SECRET_KEY set: re-encrypt under that key)')
    .option('--json', 'print the result as JSON')
    .action(async (opts: { json?: boolean }) => {
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
        const fresh = randomBytes(32);
        // The new key goes first while the old ones stay, so every value opens at every moment.
        writeKeyFile(path, [fresh, ...old]);
        // Keys listed in MAILSVC_SECRET_KEY_PREVIOUS open values too, as they do in the service.
        const previous = settings.secretKeyPrevious.map((k) => Buffer.from(k, 'base64'));
        const result = await resealAll(db, new SecretBox(fresh, [...old, ...previous]));
        writeKeyFile(path, [fresh]);
        output(opts.json, { ...result, key_source: path }, () =>
          `New key ${result.key_id} written to ${path}; ${result.resealed} secret(s) re-encrypted. Restart the service to load it.`,
        );
      } finally {
        await db.destroy();
      }
    });
}
