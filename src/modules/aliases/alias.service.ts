import { sql } from 'kysely';
import type { Db } from '../../db/database.js';
import type { AliasTable } from './tables.js';
import { AppError, badRequest, queryError } from '../../shared/errors.js';
import type { Clock } from '../../shared/clock.js';
import { normalizeAddress, normalizeAliasSource } from '../../shared/mail-names.js';
import { isUniqueViolation } from '../../shared/db-errors.js';
import type { Page, Paged } from '../../shared/paging.js';
import type { DomainLookup } from '../domains/index.js';
import type { RoutingGuard } from '../routing/index.js';

type AliasRow = Omit<AliasTable, 'id'> & { id: number };
export type { AliasView } from './schema.js';
import type { AliasView } from './schema.js';
import { ALIAS_SORT } from './schema.js';
import { direction, sortOf } from '../sort.schema.js';

const MAX_DESTINATIONS = 100;

/** The column each sort field orders by. */
const SORT_COLUMN = { source: 'l.source', domain: 'd.name', active: 'l.active', created_at: 'l.created_at' } as const;

const present = (r: AliasRow & { domain: string }): AliasView => ({
  id: r.id,
  source: r.source,
  domain: r.domain,
  destinations: r.destination.split(',').filter(Boolean),
  active: r.active === 1,
  created_at: new Date(r.created_at).toISOString(),
  updated_at: new Date(r.updated_at).toISOString(),
});

/** Aliases: a source address (or `@domain` catch-all) forwarding to one or more addresses. */
export class AliasService {
  constructor(
    private readonly db: Db,
    private readonly domains: DomainLookup,
    private readonly routing: RoutingGuard,
    private readonly clock: Clock,
  ) {}

  private query() {
    return this.db.selectFrom('aliases as l').innerJoin('domains as d', 'd.id', 'l.domain_id').selectAll('l').select('d.name as domain');
  }

  async create(input: { source: string; destinations: string[]; active?: boolean }): Promise<AliasView> {
    const { source, domain } = normalizeAliasSource(input.source);
    if (input.destinations.length === 0 || input.destinations.length > MAX_DESTINATIONS) {
      throw badRequest(`destinations must hold 1 to ${MAX_DESTINATIONS} addresses`);
    }
    const destinations = [...new Set(input.destinations.map((d) => normalizeAddress(d).address))];
    if (destinations.includes(source)) throw badRequest('An alias cannot forward to itself');
    const dom = await this.domains.requireExisting(domain);
    const now = this.clock.now();
    // Under the routing lock: no mailbox or alias can appear at `source`, and no
    // alias can change, between these checks and the insert.
    await this.routing.change(async (tx, routes) => {
      const use = await routes.addressUse(source);
      if (use === 'mailbox') throw new AppError('conflict', `${source} is a mailbox: an address is either a mailbox or an alias, never both`);
      if (use === 'alias') throw new AppError('conflict', `Alias ${source} already exists`);
      await routes.refuseLoop(source, destinations);
      try {
        await tx
          .insertInto('aliases')
          .values({ domain_id: dom.id, source, destination: destinations.join(','), active: input.active === false ? 0 : 1, created_at: now, updated_at: now })
          .execute();
      } catch (err) {
        if (isUniqueViolation(err)) throw new AppError('conflict', `Alias ${source} already exists`);
        throw err;
      }
    });
    return this.get(source);
  }

  /**
   * A page by source, or by `sort` with the source breaking ties (sources are unique, so pages never
   * overlap); `q`: only the aliases whose source or a destination contains it (a literal: % and _ match themselves).
   */
  async list(filter: { domain?: string | undefined; q?: string | undefined }, page: Page, sort?: string): Promise<Paged<AliasView>> {
    const order = sortOf(sort, ALIAS_SORT);
    const text = filter.q?.trim().toLowerCase();
    if (text !== undefined && !/^[a-z0-9.@_+=-]{0,320}$/.test(text)) {
      const message = 'letters, digits and . @ _ + = - only (part of an address)';
      throw queryError('q', message);
    }
    const domainId = filter.domain === undefined ? undefined : (await this.domains.resolve(filter.domain)).id;
    let q = this.query();
    let c = this.db.selectFrom('aliases as l');
    if (domainId !== undefined) {
      q = q.where('l.domain_id', '=', domainId);
      c = c.where('l.domain_id', '=', domainId);
    }
    if (text) {
      // ESCAPE '!' the same way on SQLite (no default escape), PostgreSQL and MariaDB.
      const pattern = `%${text.replace(/[!%_]/g, (ch) => `!${ch}`)}%`;
      const holds = sql<boolean>`(l.source like ${pattern} escape '!' or l.destination like ${pattern} escape '!')`;
      q = q.where(holds);
      c = c.where(holds);
    }
    const rows = await q
      .$call((r) => (order && order.field !== 'source' ? r.orderBy(SORT_COLUMN[order.field], direction(order)) : r))
      .orderBy('l.source', order?.field === 'source' ? direction(order) : 'asc')
      .limit(page.limit)
      .offset(page.offset)
      .execute();
    const total = await c.select((e) => e.fn.countAll<number>().as('n')).executeTakeFirstOrThrow();
    return { items: rows.map(present), total: Number(total.n), ...page };
  }

  async get(idOrSource: string | number): Promise<AliasView> {
    const q = this.query();
    const row =
      typeof idOrSource === 'number' || /^\d+$/.test(idOrSource)
        ? await q.where('l.id', '=', Number(idOrSource)).executeTakeFirst()
        : await q.where('l.source', '=', normalizeAliasSource(idOrSource).source).executeTakeFirst();
    if (!row) throw new AppError('not_found', `Alias ${String(idOrSource)} not found`);
    return present(row);
  }

  async delete(idOrSource: string | number): Promise<void> {
    const alias = await this.get(idOrSource);
    // Under the routing lock: without this alias its address may fall to a catch-all that leads back to it.
    await this.routing.change(async (tx, routes) => {
      await tx.deleteFrom('aliases').where('id', '=', alias.id).execute();
      await routes.refuseLoopWithout(alias.source);
    });
  }
}
