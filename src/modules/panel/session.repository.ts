import type { Db } from '../../db/database.js';
import type { PanelSessionTable } from './tables.js';

export type PanelSessionRow = PanelSessionTable;

/** The panel_sessions table, and nothing else. */
export class PanelSessionRepository {
  constructor(private readonly db: Db) {}

  async insert(row: PanelSessionRow): Promise<void> {
    await this.db.insertInto('panel_sessions').values(row).execute();
  }

  async find(idHash: string): Promise<PanelSessionRow | undefined> {
    return this.db.selectFrom('panel_sessions').selectAll().where('id_hash', '=', idHash).executeTakeFirst();
  }

  async touch(idHash: string, at: number): Promise<void> {
    await this.db.updateTable('panel_sessions').set({ last_seen_at: at }).where('id_hash', '=', idHash).execute();
  }

  async remove(idHash: string): Promise<void> {
    await this.db.deleteFrom('panel_sessions').where('id_hash', '=', idHash).execute();
  }

  /** Sessions past their absolute end or idle beyond `idleBefore`. */
  async prune(now: number, idleBefore: number): Promise<void> {
    await this.db.deleteFrom('panel_sessions').where((eb) => eb.or([eb('expires_at', '<=', now), eb('last_seen_at', '<=', idleBefore)])).execute();
  }
}
