import type { Db } from '../../db/database.js';
import type { ApiKeyTable } from './tables.js';

export class ApiKeyRepository {
  constructor(private readonly db: Db) {}

  async insert(row: ApiKeyTable): Promise<void> {
    await this.db.insertInto('api_keys').values(row).execute();
  }

  async findById(id: string): Promise<ApiKeyTable | undefined> {
    return this.db.selectFrom('api_keys').selectAll().where('id', '=', id).executeTakeFirst();
  }

  async listLive(): Promise<ApiKeyTable[]> {
    return this.db.selectFrom('api_keys').selectAll().where('revoked_at', 'is', null).orderBy('created_at').orderBy('id').execute();
  }

  /** True when this call revoked it (it existed and was not revoked yet). */
  async revoke(id: string, at: number): Promise<boolean> {
    const r = await this.db.updateTable('api_keys').set({ revoked_at: at }).where('id', '=', id).where('revoked_at', 'is', null).executeTakeFirst();
    return Number(r.numUpdatedRows) === 1;
  }
}
