import type { Db } from '../../db/database.js';
import type { AuditLogTable } from './tables.js';
import type { Page } from '../../shared/paging.js';
import type { AuditFilter, AuditSort } from './schema.js';
import { direction } from '../sort.schema.js';

export type AuditRow = Omit<AuditLogTable, 'id'> & { id: number };

export class AuditRepository {
  constructor(private readonly db: Db) {}

  async insert(row: Omit<AuditLogTable, 'id'>): Promise<void> {
    await this.db.insertInto('audit_log').values(row).execute();
  }

  /**
   * A page newest first (`at`, then `id`: records of the same millisecond keep their order); `sort` by
   * `at` turns both around, by another field puts it first with the newest first among equals.
   */
  async list(filter: AuditFilter, page: Page, sort?: AuditSort): Promise<{ rows: AuditRow[]; total: number }> {
    let q = this.db.selectFrom('audit_log');
    if (filter.action !== undefined) q = q.where('action', '=', filter.action);
    if (filter.target !== undefined) q = q.where('target', '=', filter.target);
    if (filter.actor !== undefined) q = q.where('actor', '=', filter.actor);
    if (filter.from !== undefined) q = q.where('at', '>=', filter.from);
    if (filter.to !== undefined) q = q.where('at', '<', filter.to);
    const newest = sort?.field === 'at' ? direction(sort) : 'desc';
    const rows = await q
      .selectAll()
      .$call((r) => (sort && sort.field !== 'at' ? r.orderBy(sort.field, direction(sort)) : r))
      .orderBy('at', newest)
      .orderBy('id', newest)
      .limit(page.limit)
      .offset(page.offset)
      .execute();
    const total = await q.select((e) => e.fn.countAll<number>().as('n')).executeTakeFirstOrThrow();
    return { rows: rows.map((r) => ({ ...r, id: Number(r.id), at: Number(r.at) })), total: Number(total.n) };
  }

  /** Deletes records older than `before` (epoch ms); returns how many. */
  async deleteBefore(before: number): Promise<number> {
    const r = await this.db.deleteFrom('audit_log').where('at', '<', before).executeTakeFirst();
    return Number(r.numDeletedRows);
  }
}
