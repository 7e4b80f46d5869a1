import type { Db } from '../../db/database.js';

/** The `limits` table: only keys changed at run time have a row. */
export class LimitRepository {
  constructor(private readonly db: Db) {}

  async all(): Promise<Record<string, string>> {
    const rows = await this.db.selectFrom('limits').select(['key', 'value']).execute();
    return Object.fromEntries(rows.map((r) => [r.key, r.value]));
  }

  /** Stores every value in one transaction: all of them, or none. */
  async setMany(values: Readonly<Record<string, number>>, now: number): Promise<void> {
    await this.db.transaction().execute(async (tx) => {
      for (const [key, value] of Object.entries(values)) {
        await tx.deleteFrom('limits').where('key', '=', key).execute();
        await tx.insertInto('limits').values({ key, value: String(value), updated_at: now }).execute();
      }
    });
  }
}
