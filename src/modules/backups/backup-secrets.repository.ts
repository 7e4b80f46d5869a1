import { randomBytes } from 'node:crypto';
import type { Db } from '../../db/database.js';
import { sealContext } from '../../db/sealed-columns.js';
import type { SecretBox } from '../../shared/secret-box.js';

export const ENCRYPTION_KEY = 'encryption_key';

/** The sealed backup secrets (table backup_secrets). Values are opened only to hand them to rclone. */
export class BackupSecrets {
  // The box is reached on first use: a restore on a fresh host (no key file yet) never needs it.
  constructor(db: Db | (() => Db), private readonly boxOf: () => SecretBox) {
    this.dbOf = typeof db === 'function' ? db : () => db;
  }

  private readonly dbOf: () => Db;
  private get db(): Db {
    return this.dbOf();
  }

  private get box(): SecretBox {
    return this.boxOf();
  }

  async get(name: string): Promise<string | null> {
    const row = await this.db.selectFrom('backup_secrets').select('value').where('name', '=', name).executeTakeFirst();
    return row ? this.box.open(row.value, sealContext('backup_secrets', name, 'value')) : null;
  }

  async put(name: string, value: string): Promise<void> {
    const sealed = this.box.seal(value, sealContext('backup_secrets', name, 'value'));
    await this.db.deleteFrom('backup_secrets').where('name', '=', name).execute();
    await this.db.insertInto('backup_secrets').values({ name, value: sealed, created_at: Date.now(), shown_at: null }).execute();
  }

  /** Names starting with `prefix`; none on a fresh host whose database is not there yet (a restore fetching from a remote). */
  async names(prefix: string): Promise<string[]> {
    try {
      const rows = await this.db.selectFrom('backup_secrets').select('name').where('name', 'like', `${prefix}%`).execute();
      return rows.map((r) => r.name);
    } catch {
      return [];
    }
  }

  /** The encryption key of remote archives, made (32 random bytes, base64) on first use. `created` says it is new. */
  async encryptionKey(): Promise<{ key: string; created: boolean }> {
    const have = await this.get(ENCRYPTION_KEY);
    if (have !== null) return { key: have, created: false };
    const key = randomBytes(32).toString('base64');
    await this.put(ENCRYPTION_KEY, key);
    return { key, created: true };
  }

  /** The key once: null when it was shown before (conditional UPDATE, so two callers cannot both see it). */
  async showKeyOnce(): Promise<string | null> {
    const { key } = await this.encryptionKey();
    const r = await this.db.updateTable('backup_secrets').set({ shown_at: Date.now() }).where('name', '=', ENCRYPTION_KEY).where('shown_at', 'is', null).executeTakeFirst();
    return Number(r.numUpdatedRows) === 1 ? key : null;
  }
}
