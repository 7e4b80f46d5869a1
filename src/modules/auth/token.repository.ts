import type { Db } from '../../db/database.js';
import type { AccessTokenTable } from './tables.js';

export type TokenRow = AccessTokenTable;

export class TokenRepository {
  constructor(private readonly db: Db) {}

  async insert(row: TokenRow): Promise<void> {
    await this.db.insertInto('access_tokens').values(row).execute();
  }

  async findById(id: string): Promise<TokenRow | undefined> {
    return this.db.selectFrom('access_tokens').selectAll().where('id', '=', id).executeTakeFirst();
  }

  async revoke(id: string, at: number): Promise<void> {
    await this.db.updateTable('access_tokens').set({ revoked_at: at }).where('id', '=', id).where('revoked_at', 'is', null).execute();
  }

  async revokeAll(at: number): Promise<number> {
    const r = await this.db.updateTable('access_tokens').set({ revoked_at: at }).where('revoked_at', 'is', null).where('expires_at', '>', at).executeTakeFirst();
    return Number(r.numUpdatedRows);
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
    await this.db.updateTable('access_tokens').set({ revoked_at: at }).where('id', 'in', rows.map((r) => r.id)).where('revoked_at', 'is', null).execute();
    return rows;
  }

  /** Rows a day past expiry are of no use to anyone; keeps the table small. */
  async deleteExpired(before: number): Promise<void> {
    await this.db.deleteFrom('access_tokens').where('expires_at', '<', before).execute();
  }
}
