import type { Db, DialectName } from '../../db/database.js';
import { serviceKey } from '../../db/service-keys.js';
import { hmacSha256 } from '../../shared/crypto.js';
import type { SecretBox } from '../../shared/secret-box.js';

/** What identifies the administrator's password as configured: the hash, or the plain development password. */
export type AdminIdentity = { username: string; passwordHash: string | undefined; plainPassword: string | undefined };

const ROW_ID = 1;

/**
 * A keyed fingerprint (HMAC-SHA256 under a service key kept sealed in the
 * database) of the administrator's username and password hash, as the
 * service last started with them. Nothing about the password can be learned
 * from it without the secret key. `record` stores the current one and tells
 * whether it differs from the stored one: then every token must go.
 */
export class AdminFingerprint {
  constructor(private readonly deps: { db: Db; dialect: DialectName; box: SecretBox }) {}

  private async compute(id: AdminIdentity): Promise<string> {
    const key = await serviceKey(this.deps.db, this.deps.dialect, this.deps.box, 'admin-fingerprint');
    const secret = id.passwordHash ? `hash:${id.passwordHash}` : id.plainPassword ? `plain:${id.plainPassword}` : 'none';
    return hmacSha256(key, `${id.username}\n${secret}`).toString('base64url');
  }

  /** Stores the fingerprint of `id`; `changed` is true when one was stored before and differs (or none was). */
  async record(id: AdminIdentity, now: number): Promise<{ changed: boolean; first: boolean }> {
    const { db, dialect } = this.deps;
    const fingerprint = await this.compute(id);
    const stored = await db.selectFrom('admin_fingerprint').select('fingerprint').where('id', '=', ROW_ID).executeTakeFirst();
    if (stored?.fingerprint === fingerprint) return { changed: false, first: false };
    if (stored) {
      await db.updateTable('admin_fingerprint').set({ fingerprint, updated_at: now }).where('id', '=', ROW_ID).execute();
      return { changed: true, first: false };
    }
    const insert = db.insertInto('admin_fingerprint').values({ id: ROW_ID, fingerprint, updated_at: now });
    if (dialect === 'mysql') await insert.ignore().execute();
    else await insert.onConflict((oc) => oc.column('id').doNothing()).execute();
    // No fingerprint before (a new database, or one from before fingerprints): tokens made under
    // an unknown password are not kept.
    return { changed: true, first: true };
  }
}
