import type { Db } from '../../db/database.js';
import { sha256 } from '../../shared/crypto.js';
import type { AdminPasskeyTable } from './tables.js';

export type PasskeyRow = AdminPasskeyTable;

/** The admin_passkeys table. A credential is found by the SHA-256 of its ID (the unique index). */
export class PasskeyRepository {
  private count: number | null = null;

  /** `cache`: keep the number of passkeys in memory (one instance only, as the MFA record). */
  constructor(private readonly db: Db, private readonly cache = false) {}

  static hashOf(credentialId: string): string {
    return sha256(credentialId).toString('hex');
  }

  async all(): Promise<PasskeyRow[]> {
    return this.db.selectFrom('admin_passkeys').selectAll().orderBy('created_at').orderBy('id').execute();
  }

  async howMany(): Promise<number> {
    if (this.cache && this.count !== null) return this.count;
    const r = await this.db.selectFrom('admin_passkeys').select((eb) => eb.fn.countAll().as('n')).executeTakeFirstOrThrow();
    const n = Number(r.n);
    if (this.cache) this.count = n;
    return n;
  }

  async byCredential(credentialId: string): Promise<PasskeyRow | undefined> {
    return this.db.selectFrom('admin_passkeys').selectAll().where('credential_hash', '=', PasskeyRepository.hashOf(credentialId)).executeTakeFirst();
  }

  async byId(id: string): Promise<PasskeyRow | undefined> {
    return this.db.selectFrom('admin_passkeys').selectAll().where('id', '=', id).executeTakeFirst();
  }

  /** false when the credential is registered already. */
  async insert(row: PasskeyRow): Promise<boolean> {
    this.count = null;
    try {
      await this.db.insertInto('admin_passkeys').values(row).execute();
      return true;
    } catch (err) {
      if ((await this.byCredential(row.credential_id)) !== undefined) return false;
      throw err;
    } finally {
      this.count = null;
    }
  }

  async rename(id: string, name: string): Promise<boolean> {
    const r = await this.db.updateTable('admin_passkeys').set({ name }).where('id', '=', id).executeTakeFirst();
    return Number(r.numUpdatedRows) === 1;
  }

  async remove(id: string): Promise<boolean> {
    this.count = null;
    const r = await this.db.deleteFrom('admin_passkeys').where('id', '=', id).executeTakeFirst();
    this.count = null;
    return Number(r.numDeletedRows) === 1;
  }

  async removeAll(): Promise<void> {
    this.count = null;
    await this.db.deleteFrom('admin_passkeys').execute();
    this.count = null;
  }

  /**
   * Records a use: the new counter and the time, only if the counter is still
   * the one the assertion was checked against. Two uses of one assertion (or
   * of two assertions with one counter) cannot both pass, on any instance.
   */
  async recordUse(id: string, oldCounter: number, newCounter: number, at: number, backedUp: boolean): Promise<boolean> {
    const r = await this.db
      .updateTable('admin_passkeys')
      .set({ counter: newCounter, last_used_at: at, backed_up: backedUp ? 1 : 0 })
      .where('id', '=', id)
      .where('counter', '=', oldCounter)
      .executeTakeFirst();
    return Number(r.numUpdatedRows) === 1;
  }

  dropCache(): void {
    this.count = null;
  }
}
