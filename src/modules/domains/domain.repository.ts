import type { Db } from '../../db/database.js';
import type { DomainTable } from '../../db/schema.js';
import type { Page } from '../../shared/paging.js';

export type DomainRow = Omit<DomainTable, 'id'> & { id: number };

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

  async list(page: Page): Promise<{ rows: (DomainRow & { accounts: number; aliases: number })[]; total: number }> {
    const rows = await this.db
      .selectFrom('domains as d')
      .selectAll('d')
      .select((eb) => [
        eb.selectFrom('accounts as a').whereRef('a.domain_id', '=', 'd.id').select((e) => e.fn.countAll<number>().as('n')).as('accounts'),
        eb.selectFrom('aliases as l').whereRef('l.domain_id', '=', 'd.id').select((e) => e.fn.countAll<number>().as('n')).as('aliases'),
      ])
      .orderBy('d.name')
      .limit(page.limit)
      .offset(page.offset)
      .execute();
    const total = await this.db.selectFrom('domains').select((e) => e.fn.countAll<number>().as('n')).executeTakeFirstOrThrow();
    return { rows: rows.map((r) => ({ ...r, accounts: Number(r.accounts ?? 0), aliases: Number(r.aliases ?? 0) })), total: Number(total.n) };
  }

  async activeNames(): Promise<string[]> {
    return (await this.db.selectFrom('domains').select('name').where('active', '=', 1).orderBy('name').execute()).map((r) => r.name);
  }

  async setActive(id: number, active: boolean, now: number): Promise<void> {
    await this.db.updateTable('domains').set({ active: active ? 1 : 0, updated_at: now }).where('id', '=', id).execute();
  }

  /** Deletes the domain only when it holds no account and no alias, in one transaction. */
  async deleteIfEmpty(id: number): Promise<'deleted' | 'not_empty' | 'missing'> {
    return this.db.transaction().execute(async (tx) => {
      const accounts = await tx.selectFrom('accounts').select('id').where('domain_id', '=', id).limit(1).execute();
      const aliases = await tx.selectFrom('aliases').select('id').where('domain_id', '=', id).limit(1).execute();
      if (accounts.length > 0 || aliases.length > 0) return 'not_empty';
      const r = await tx.deleteFrom('domains').where('id', '=', id).executeTakeFirst();
      return Number(r.numDeletedRows) === 1 ? 'deleted' : 'missing';
    });
  }
}
