import { existsSync } from 'node:fs';
import { sql } from 'kysely';
import type { Settings } from '../../config/settings.js';
import { createDb } from '../../db/database.js';
import { appliedSchema } from '../../db/migrate.js';
import type { Schema } from '../../db/migrate.js';
import { SEALED_COLUMNS, sealContext } from '../../db/sealed-columns.js';
import { AppError } from '../../shared/errors.js';
import { keyFilePath, loadSecretBox } from '../../shared/secret-key-file.js';
import type { SecretBox } from '../../shared/secret-box.js';

/** What the proof found: the lines of the report, and what stops the service from starting (empty: it opens). */
export type Proof = { steps: string[]; problems: string[] };

const safeUrl = (url: string): string => url.replace(/\/\/[^@/]*@/, '//');
const message = (err: unknown): string => (err instanceof AppError ? err.detail : err instanceof Error ? err.message : String(err));

/**
 * Proves a restored host opens the way `mailsvc serve` will open it, with the
 * settings it will read (`settings`: loaded again after the configuration came
 * back): the database is there and reachable, its schema is this version's,
 * the secret key is loaded, and one sealed value (if the database holds any)
 * decrypts with it. Never prints a secret: only table, column and key ids.
 */
export async function proveRestored(settings: Settings, schema: Pick<Schema, 'latest'>): Promise<Proof> {
  const steps: string[] = [];
  const problems: string[] = [];
  const url = settings.databaseUrl;
  if (url.startsWith('sqlite://') && !existsSync(url.slice('sqlite://'.length))) {
    return { steps, problems: [`there is no database at ${url.slice('sqlite://'.length)} (the database the settings name): restore it with --restore-db`] };
  }
  let box: SecretBox | null = null;
  try {
    box = loadSecretBox(settings, { create: false });
  } catch (err) {
    problems.push(`no secret key is loaded (${settings.secretKey !== undefined ? 'MAILSVC_SECRET_KEY' : keyFilePath(settings)}): ${message(err)}`);
  }
  const db = createDb(url);
  try {
    let applied: string | null;
    try {
      applied = await appliedSchema(db);
    } catch (err) {
      problems.push(`the database ${safeUrl(url)} cannot be opened: ${message(err)}`);
      return { steps, problems };
    }
    if (applied !== schema.latest) problems.push(`the database ${safeUrl(url)} has schema ${applied ?? 'none'}, this mailsvc needs ${schema.latest}: run mailsvc db migrate`);
    else steps.push(`proved: the database ${safeUrl(url)} opens, schema ${applied}`);
    if (!box) return { steps, problems };
    for (const { table, key, column } of SEALED_COLUMNS) {
      let row: { k: string | number; v: string } | undefined;
      try {
        row = (await sql<{ k: string | number; v: string }>`select ${sql.ref(key)} as k, ${sql.ref(column)} as v from ${sql.table(table)} where ${sql.ref(column)} is not null`.execute(db)).rows[0];
      } catch {
        continue; // a table this schema lacks was already reported as the schema
      }
      if (!row) continue;
      try {
        box.open(row.v, sealContext(table, row.k, column));
        steps.push(`proved: a sealed secret (${table}.${column}) decrypts with key ${box.keyId}`);
      } catch (err) {
        problems.push(`a sealed secret (${table}.${column}, sealed with key ${box.sealedWith(row.v) ?? '?'}) does not decrypt with the loaded key ${box.keyId}${err instanceof AppError ? '' : ' (wrong key or damaged value)'}: restore the key file with --restore-config, or set MAILSVC_SECRET_KEY / MAILSVC_SECRET_KEY_PREVIOUS to the backup host's key`);
      }
      return { steps, problems };
    }
    steps.push(`proved: the secret key ${box.keyId} is loaded; the database holds no sealed secret to decrypt`);
    return { steps, problems };
  } finally {
    await db.destroy();
  }
}

export { RestoreUnproven } from './errors.js';
