import type { Db } from '../../db/database.js';
import type { BanTable } from './tables.js';

/** The reasons of manual bans (fail2ban itself holds the bans). */
export class BanRepository {
  constructor(private readonly db: Db) {}

  async all(): Promise<BanTable[]> {
    return this.db.selectFrom('bans').selectAll().execute();
  }

  /** Inserts, or replaces the reason of an address banned again. */
  async put(row: BanTable): Promise<void> {
    await this.db.transaction().execute(async (tx) => {
      await tx.deleteFrom('bans').where('ip', '=', row.ip).execute();
      await tx.insertInto('bans').values(row).execute();
    });
  }

  async remove(ip: string): Promise<void> {
    await this.db.deleteFrom('bans').where('ip', '=', ip).execute();
  }
}
