import type { Db } from '../../db/database.js';
import type { DkimKeyTable } from './tables.js';

export type DkimKeyRow = DkimKeyTable;
export type DkimState = 'pending' | 'active' | 'retiring' | 'retired';

/** The DKIM keys (private keys stay sealed here; the service opens them). */
export class DkimRepository {
  constructor(private readonly db: Db) {}

  async insert(rows: readonly DkimKeyRow[]): Promise<void> {
    await this.db.transaction().execute(async (tx) => {
      for (const row of rows) await tx.insertInto('dkim_keys').values(row).execute();
    });
  }

  /** Deletes keys by id (keys made for a domain whose signing could not be set up). */
  async remove(ids: readonly string[]): Promise<void> {
    if (ids.length === 0) return;
    await this.db.deleteFrom('dkim_keys').where('id', 'in', ids).execute();
  }

  /** Every key of a domain that is not retired, oldest first. */
  listLive(domain: string): Promise<DkimKeyRow[]> {
    return this.db.selectFrom('dkim_keys').selectAll().where('domain', '=', domain).where('state', '!=', 'retired').orderBy('created_at').orderBy('id').execute();
  }

  /** Every selector a domain ever used (a retired selector is never reused). */
  async selectors(domain: string): Promise<Set<string>> {
    const rows = await this.db.selectFrom('dkim_keys').select('selector').where('domain', '=', domain).execute();
    return new Set(rows.map((r) => r.selector));
  }

  /** The keys Rspamd signs with, every domain. */
  listActive(): Promise<DkimKeyRow[]> {
    return this.db.selectFrom('dkim_keys').selectAll().where('state', '=', 'active').orderBy('domain').orderBy('id').execute();
  }

  /**
   * A deleted domain, inside the delete's transaction: its keys retired (the
   * rows stay, so a selector is never reused while caches may still hold its
   * record), its rotation and its DNS provider settings (sealed token) dropped.
   */
  async forgetDomain(tx: Db, domain: string, at: number): Promise<void> {
    await tx.updateTable('dkim_keys').set({ state: 'retired', retired_at: at }).where('domain', '=', domain).where('state', '!=', 'retired').execute();
    await tx.deleteFrom('dkim_rotations').where('domain', '=', domain).execute();
    await tx.deleteFrom('dns_sync').where('domain', '=', domain).execute();
  }

  async setState(domain: string, selectors: readonly string[], state: DkimState, at: number): Promise<void> {
    if (selectors.length === 0) return;
    const stamp = state === 'active' ? { activated_at: at } : state === 'retired' ? { retired_at: at } : {};
    await this.db.updateTable('dkim_keys').set({ state, ...stamp }).where('domain', '=', domain).where('selector', 'in', selectors).execute();
  }
}
