import { sql } from 'kysely';
import type { Db } from '../../db/database.js';
import type { DomainTable } from './tables.js';
import type { Page } from '../../shared/paging.js';
import { direction } from '../sort.schema.js';
import type { Sort } from '../sort.schema.js';
import type { DomainSortField } from './schema.js';

export type DomainRow = Omit<DomainTable, 'id'> & { id: number };

/** The column (or counted subquery, by its alias) each sort field orders by. */
const SORT_COLUMN = { name: 'd.name', active: 'd.active', accounts: 'accounts', aliases: 'aliases', created_at: 'd.created_at' } as const;

export class DomainRepository {
  constructor(private readonly db: Db) {}

  async insert(name: string, now: number): Promise<DomainRow> {
    await this.db.insertInto('domains').values({ name, active: 1, created_at: now, updated_at: now }).execute();
    return this.db.selectFrom('domains').selectAll().where('name', '=', name).executeTakeFirstOrThrow();
  }

  findByName(name: string): Promise<DomainRow | undefined> {
    return this.db.selectFrom('domains').selectAll().where('name', '=', name).executeTakeFirst();
  }

  findById(id: number): Promise<DomainRow | undefined> {
    return this.db.selectFrom('domains').selectAll().where('id', '=', id).executeTakeFirst();
  }

  /**
   * A page of the domains by name, or by `sort` with the name breaking ties (names are unique, so
   * pages never overlap); with `contains`, only the names holding that text (a literal: % and _ match themselves).
   */
  async list(page: Page, contains?: string, sort?: Sort<DomainSortField>): Promise<{ rows: (DomainRow & { accounts: number; aliases: number })[]; total: number }> {
    // ESCAPE '!' the same way on SQLite (no default escape), PostgreSQL and MariaDB.
    const pattern = contains ? `%${contains.replace(/[!%_]/g, (c) => `!${c}`)}%` : undefined;
    const rows = await this.db
      .selectFrom('domains as d')
      .$if(pattern !== undefined, (q) => q.where(sql<boolean>`d.name like ${pattern} escape '!'`))
      .selectAll('d')
      .select((eb) => [
        eb.selectFrom('accounts as a').whereRef('a.domain_id', '=', 'd.id').select((e) => e.fn.countAll<number>().as('n')).as('accounts'),
        eb.selectFrom('aliases as l').whereRef('l.domain_id', '=', 'd.id').select((e) => e.fn.countAll<number>().as('n')).as('aliases'),
      ])
      .$call((q) => (sort && sort.field !== 'name' ? q.orderBy(SORT_COLUMN[sort.field], direction(sort)) : q))
      .orderBy('d.name', sort?.field === 'name' ? direction(sort) : 'asc')
      .limit(page.limit)
      .offset(page.offset)
      .execute();
    const total = await this.db
      .selectFrom('domains as d')
      .$if(pattern !== undefined, (q) => q.where(sql<boolean>`d.name like ${pattern} escape '!'`))
      .select((e) => e.fn.countAll<number>().as('n'))
      .executeTakeFirstOrThrow();
    return { rows: rows.map((r) => ({ ...r, accounts: Number(r.accounts ?? 0), aliases: Number(r.aliases ?? 0) })), total: Number(total.n) };
  }

  async activeNames(): Promise<string[]> {
    return (await this.db.selectFrom('domains').select('name').where('active', '=', 1).orderBy('name').execute()).map((r) => r.name);
  }

  async setActive(id: number, active: boolean, now: number): Promise<void> {
    await this.db.updateTable('domains').set({ active: active ? 1 : 0, updated_at: now }).where('id', '=', id).execute();
  }

  async isEmpty(id: number): Promise<boolean> {
    const accounts = await this.db.selectFrom('accounts').select('id').where('domain_id', '=', id).limit(1).execute();
    const aliases = await this.db.selectFrom('aliases').select('id').where('domain_id', '=', id).limit(1).execute();
    return accounts.length === 0 && aliases.length === 0;
  }

  /** Deletes the domain only when it holds no account and no alias, with `also` (what other modules drop with it) in one transaction. */
  async deleteIfEmpty(id: number, also?: (tx: Db) => Promise<void>): Promise<'deleted' | 'not_empty' | 'missing'> {
    return this.db.transaction().execute(async (tx) => {
      const accounts = await tx.selectFrom('accounts').select('id').where('domain_id', '=', id).limit(1).execute();
      const aliases = await tx.selectFrom('aliases').select('id').where('domain_id', '=', id).limit(1).execute();
      if (accounts.length > 0 || aliases.length > 0) return 'not_empty';
      const name = (await tx.selectFrom('domains').select('name').where('id', '=', id).executeTakeFirst())?.name;
      if (name === undefined) return 'missing';
      await also?.(tx);
      await tx.deleteFrom('domains').where('id', '=', id).execute();
      return 'deleted';
    });
  }
}
