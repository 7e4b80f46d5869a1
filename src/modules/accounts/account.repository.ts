import { sql } from 'kysely';
import type { Db } from '../../db/database.js';
import type { AccountTable } from './tables.js';
import type { Page } from '../../shared/paging.js';
import { direction } from '../sort.schema.js';
import type { Sort } from '../sort.schema.js';
import type { AccountSortField } from './schema.js';

export type AccountRow = Omit<AccountTable, 'id'> & { id: number };
export type AccountChanges = Partial<Omit<AccountRow, 'id' | 'domain_id' | 'local_part' | 'address' | 'created_at'>>;


export class AccountRepository {
  constructor(private readonly db: Db) {}

  /** Inserts in `tx` when given (the routing guard's transaction). */
  async insert(row: Omit<AccountRow, 'id'>, tx: Db = this.db): Promise<AccountRow> {
    await tx.insertInto('accounts').values(row).execute();
    return tx.selectFrom('accounts').selectAll().where('address', '=', row.address).executeTakeFirstOrThrow();
  }

  findById(id: number): Promise<AccountRow | undefined> {
    return this.db.selectFrom('accounts').selectAll().where('id', '=', id).executeTakeFirst();
  }

  findByAddress(address: string): Promise<AccountRow | undefined> {
    return this.db.selectFrom('accounts').selectAll().where('address', '=', address).executeTakeFirst();
  }

  /** The account and whether its domain is active, in one query (the mail login path). */
  findForLogin(address: string): Promise<(AccountRow & { domain_active: number }) | undefined> {
    return this.db
      .selectFrom('accounts as a')
      .innerJoin('domains as d', 'd.id', 'a.domain_id')
      .selectAll('a')
      .select('d.active as domain_active')
      .where('a.address', '=', address)
      .executeTakeFirst();
  }

  /**
   * A page by address, or by `sort` with the address breaking ties (addresses are unique, so pages
   * never overlap); with `contains`, only the addresses holding that text (a literal: % and _ match themselves).
   */
  async list(filter: { domainId?: number; contains?: string }, page: Page, sort?: Sort<AccountSortField>): Promise<{ rows: AccountRow[]; total: number }> {
    let q = this.db.selectFrom('accounts');
    if (filter.domainId !== undefined) q = q.where('domain_id', '=', filter.domainId);
    // ESCAPE '!' the same way on SQLite (no default escape), PostgreSQL and MariaDB.
    if (filter.contains) q = q.where(sql<boolean>`address like ${`%${filter.contains.replace(/[!%_]/g, (c) => `!${c}`)}%`} escape '!'`);
    const rows = await q
      .selectAll()
      .$call((r) => (sort && sort.field !== 'address' ? r.orderBy(sort.field, direction(sort)) : r))
      .orderBy('address', sort?.field === 'address' ? direction(sort) : 'asc')
      .limit(page.limit)
      .offset(page.offset)
      .execute();
    const total = await q.select((e) => e.fn.countAll<number>().as('n')).executeTakeFirstOrThrow();
    return { rows, total: Number(total.n) };
  }

  async listAll(): Promise<AccountRow[]> {
    return this.db.selectFrom('accounts').selectAll().orderBy('address').execute();
  }

  /** With `dependents`: they run in the same transaction (a new password ends what hangs on the old one). */
  async update(id: number, changes: AccountChanges, dependents?: (tx: Db) => Promise<void>): Promise<void> {
    if (!dependents) {
      await this.db.updateTable('accounts').set(changes).where('id', '=', id).execute();
      return;
    }
    await this.db.transaction().execute(async (tx) => {
      await tx.updateTable('accounts').set(changes).where('id', '=', id).execute();
      await dependents(tx);
    });
  }

  /** Deletes the account after `dependents` removed what hangs on it, in the caller's transaction `tx`. */
  async delete(id: number, dependents: (tx: Db) => Promise<void>, tx: Db): Promise<boolean> {
    await dependents(tx);
    const r = await tx.deleteFrom('accounts').where('id', '=', id).executeTakeFirst();
    return Number(r.numDeletedRows) === 1;
  }
}
