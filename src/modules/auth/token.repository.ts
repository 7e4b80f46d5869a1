import type { Transaction } from 'kysely';
import type { Db } from '../../db/database.js';
import { changeStampOf } from '../../db/database.js';
import type { ChangeStamp } from '../../db/database.js';
import type { Database } from '../../db/schema.js';
import type { AccessTokenTable } from './tables.js';

export type TokenRow = AccessTokenTable;

const MISSING = 'token_generation row missing: run mailsvc db migrate';

export class TokenRepository {
  /** On SQLite: a file beside the database touched after every revocation, read with one stat (ChangeStamp). */
  private readonly stamp: ChangeStamp | undefined;

  constructor(private readonly db: Db) {
    this.stamp = changeStampOf(db, 'token-revocations');
  }

  async insert(row: TokenRow): Promise<void> {
    await this.db.insertInto('access_tokens').values(row).execute();
  }

  async findById(id: string): Promise<TokenRow | undefined> {
    return this.db.selectFrom('access_tokens').selectAll().where('id', '=', id).executeTakeFirst();
  }

  /**
   * A number that moves after every revocation, on any instance and in any
   * process: on SQLite the stamp file beside the database (touched once the
   * revocation is committed), elsewhere the counter of migration 0029 (raised
   * in the revocation's transaction), one query.
   */
  generation(): number | Promise<number> {
    return this.generationNow() ?? this.db
      .selectFrom('token_generation')
      .select('value')
      .where('id', '=', 1)
      .executeTakeFirst()
      .then((r) => {
        if (!r) throw new Error(MISSING);
        return Number(r.value);
      });
  }

  /** The number read without waiting: SQLite only (one fstat of the stamp file); undefined elsewhere, or when the file cannot be opened. */
  generationNow(): number | undefined {
    return this.stamp?.read();
  }

  /** Raises the counter in the revocation's own transaction: no instance can read the new value before the revocation. */
  private async bump(tx: Transaction<Database>): Promise<void> {
    await tx.updateTable('token_generation').set((eb) => ({ value: eb('value', '+', 1) })).where('id', '=', 1).execute();
  }

  async revoke(id: string, at: number): Promise<void> {
    await this.db.transaction().execute(async (tx) => {
      await tx.updateTable('access_tokens').set({ revoked_at: at }).where('id', '=', id).where('revoked_at', 'is', null).execute();
      await this.bump(tx);
    });
    this.stamp?.touch();
  }

  async revokeAll(at: number): Promise<number> {
    const n = await this.db.transaction().execute(async (tx) => {
      const r = await tx.updateTable('access_tokens').set({ revoked_at: at }).where('revoked_at', 'is', null).where('expires_at', '>', at).executeTakeFirst();
      await this.bump(tx);
      return Number(r.numUpdatedRows);
    });
    this.stamp?.touch();
    return n;
  }

  /** How many tokens are live (not revoked, not expired). */
  async countLive(at: number): Promise<number> {
    const r = await this.db.selectFrom('access_tokens').select((eb) => eb.fn.countAll<number | string>().as('n')).where('revoked_at', 'is', null).where('expires_at', '>', at).executeTakeFirst();
    return Number(r?.n ?? 0);
  }

  /** Revokes the live tokens issued without a second factor; returns them (id and expiry). */
  async revokeUnverified(at: number): Promise<{ id: string; expires_at: number }[]> {
    const rows = await this.db
      .selectFrom('access_tokens')
      .select(['id', 'expires_at'])
      .where('mfa_verified', '=', 0)
      .where('revoked_at', 'is', null)
      .where('expires_at', '>', at)
      .execute();
    if (rows.length === 0) return [];
    // The transaction starts with its write (SQLite takes the write lock then, waiting if it must).
    await this.db.transaction().execute(async (tx) => {
      await tx.updateTable('access_tokens').set({ revoked_at: at }).where('id', 'in', rows.map((r) => r.id)).where('revoked_at', 'is', null).execute();
      await this.bump(tx);
    });
    this.stamp?.touch();
    return rows;
  }

  /** Rows a day past expiry are of no use to anyone; keeps the table small. */
  async deleteExpired(before: number): Promise<void> {
    await this.db.deleteFrom('access_tokens').where('expires_at', '<', before).execute();
  }
}
