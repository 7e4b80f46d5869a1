import type { Db } from '../../db/database.js';
import type { FirewallSettingsTable } from './tables.js';

/** The one row of firewall settings (id 1); absent until the first change. */
export class FirewallRepository {
  constructor(private readonly db: Db) {}

  async get(): Promise<FirewallSettingsTable | undefined> {
    return this.db.selectFrom('firewall_settings').selectAll().where('id', '=', 1).executeTakeFirst();
  }

  async put(row: Omit<FirewallSettingsTable, 'id'>): Promise<void> {
    await this.db.transaction().execute(async (tx) => {
      await tx.deleteFrom('firewall_settings').where('id', '=', 1).execute();
      await tx.insertInto('firewall_settings').values({ id: 1, ...row }).execute();
    });
  }
}
