import type { Db } from '../../db/database.js';

/** The service_settings table: one row per setting changed at run time. */
export class SettingsRepository {
  constructor(private readonly db: Db) {}

  async all(): Promise<Record<string, string>> {
    const rows = await this.db.selectFrom('service_settings').select(['key', 'value']).execute();
    return Object.fromEntries(rows.map((r) => [r.key, r.value]));
  }

  /** Stores every pair in one transaction (all or nothing). */
  async put(values: Record<string, string>, now: number): Promise<void> {
    await this.db.transaction().execute(async (tx) => {
      for (const [key, value] of Object.entries(values)) {
        const updated = await tx.updateTable('service_settings').set({ value, updated_at: now }).where('key', '=', key).executeTakeFirst();
        if (Number(updated.numUpdatedRows) === 0) await tx.insertInto('service_settings').values({ key, value, updated_at: now }).execute();
      }
    });
  }
}
