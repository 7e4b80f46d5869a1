import { randomBytes } from 'node:crypto';
import type { Db, DialectName } from './database.js';
import { sealContext } from './sealed-columns.js';
import type { SecretBox } from '../shared/secret-box.js';

/**
 * A named random key kept in the database, sealed under the secret key: every
 * instance sharing the database gets the same key, and a secret-key rotation
 * re-seals it without changing it. Created on first use (insert-or-nothing).
 */
export async function serviceKey(db: Db, dialect: DialectName, box: SecretBox, name: string): Promise<Buffer> {
  const context = sealContext('service_keys', name, 'value');
  const fresh = { name, value: box.seal(randomBytes(32).toString('base64'), context), created_at: Date.now() };
  const insert = db.insertInto('service_keys').values(fresh);
  if (dialect === 'mysql') await insert.ignore().execute();
  else await insert.onConflict((oc) => oc.column('name').doNothing()).execute();
  const row = await db.selectFrom('service_keys').select('value').where('name', '=', name).executeTakeFirstOrThrow();
  return Buffer.from(box.open(row.value, context), 'base64');
}
