import { sql } from 'kysely';
import type { Db, DialectName } from '../../db/database.js';
import type { Direction, StatsRow } from './collector.js';

export type Range = { from: number; to: number; direction?: Direction | undefined; mailbox?: string | undefined };
export type Figures = { messages: number; bytes: number };

/** 500 rows × 5 columns stays under every dialect's bound-parameter limit. */
const BATCH = 500;

/** The statistics rows and the collector's saved state (its own two tables only). */
export class StatsRepository {
  constructor(private readonly db: Db, private readonly dialect: DialectName) {}

  /**
   * Inserts rows in one transaction (one commit, one fsync, per call: a commit per
   * statement made a big log's first run ten times slower); a row already stored
   * (the same message and mailbox) is left as it is.
   */
  async insert(rows: StatsRow[]): Promise<number> {
    if (rows.length === 0) return 0;
    return this.db.transaction().execute(async (tx) => {
      let added = 0;
      for (let i = 0; i < rows.length; i += BATCH) {
        const q = tx.insertInto('stats_messages').values(rows.slice(i, i + BATCH));
        const r = this.dialect === 'mysql' ? await q.ignore().executeTakeFirst() : await q.onConflict((oc) => oc.doNothing()).executeTakeFirst();
        added += Number(r.numInsertedOrUpdatedRows ?? 0);
      }
      return added;
    });
  }

  async deleteBefore(at: number): Promise<number> {
    const r = await this.db.deleteFrom('stats_messages').where('at', '<', at).executeTakeFirst();
    return Number(r.numDeletedRows);
  }

  async loadState(): Promise<string | null> {
    const row = await this.db.selectFrom('stats_collector').select('state_json').where('id', '=', 1).executeTakeFirst();
    return row?.state_json ?? null;
  }

  async saveState(json: string, now: number): Promise<void> {
    await this.db.transaction().execute(async (tx) => {
      await tx.deleteFrom('stats_collector').where('id', '=', 1).execute();
      await tx.insertInto('stats_collector').values({ id: 1, state_json: json, updated_at: now }).execute();
    });
  }

  private filtered(r: Range) {
    let q = this.db.selectFrom('stats_messages').where('at', '>=', r.from).where('at', '<', r.to);
    if (r.direction) q = q.where('direction', '=', r.direction);
    if (r.mailbox) q = q.where('mailbox', '=', r.mailbox);
    return q;
  }

  /** Rows and bytes per direction. */
  async byDirection(r: Range): Promise<Array<Figures & { direction: string }>> {
    const rows = await this.filtered(r)
      .select((eb) => ['direction', eb.fn.countAll().as('messages'), eb.fn.sum<number>('size').as('bytes')])
      .groupBy('direction')
      .execute();
    return rows.map((x) => ({ direction: x.direction, messages: Number(x.messages), bytes: Number(x.bytes ?? 0) }));
  }

  /** Rows and bytes per mailbox and direction, for the mailboxes of one page (busiest first). */
  async byMailbox(r: Range, limit: number, offset: number): Promise<{ total: number; rows: Array<Figures & { mailbox: string; direction: string }> }> {
    const totalRow = await this.filtered(r).select((eb) => eb.fn.count<number>('mailbox').distinct().as('n')).executeTakeFirst();
    const page = await this.filtered(r)
      .select((eb) => ['mailbox', eb.fn.countAll().as('n')])
      .groupBy('mailbox')
      .orderBy(sql`count(*)`, 'desc')
      .orderBy('mailbox')
      .limit(limit)
      .offset(offset)
      .execute();
    const names = page.map((p) => p.mailbox);
    if (names.length === 0) return { total: Number(totalRow?.n ?? 0), rows: [] };
    const rows = await this.filtered(r)
      .where('mailbox', 'in', names)
      .select((eb) => ['mailbox', 'direction', eb.fn.countAll().as('messages'), eb.fn.sum<number>('size').as('bytes')])
      .groupBy(['mailbox', 'direction'])
      .execute();
    const order = new Map(names.map((n, i) => [n, i]));
    return {
      total: Number(totalRow?.n ?? 0),
      rows: rows
        .map((x) => ({ mailbox: x.mailbox, direction: x.direction, messages: Number(x.messages), bytes: Number(x.bytes ?? 0) }))
        .sort((a, b) => (order.get(a.mailbox) ?? 0) - (order.get(b.mailbox) ?? 0)),
    };
  }

  /** Rows and bytes per time bucket (`bucketMs` wide, aligned on the epoch, so days are UTC days). */
  async byBucket(r: Range, bucketMs: number): Promise<Array<Figures & { start: number; direction: string }>> {
    // `at - at % n` is integer arithmetic on all three dialects (division is not: MariaDB gives decimals).
    const bucket = sql<number>`(at - at % ${sql.lit(bucketMs)})`;
    const rows = await this.filtered(r)
      .select((eb) => [bucket.as('start'), 'direction', eb.fn.countAll().as('messages'), eb.fn.sum<number>('size').as('bytes')])
      .groupBy([bucket, 'direction'])
      .orderBy(bucket)
      .execute();
    return rows.map((x) => ({ start: Number(x.start), direction: x.direction, messages: Number(x.messages), bytes: Number(x.bytes ?? 0) }));
  }
}
