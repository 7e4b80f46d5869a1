import { CompiledQuery, sql } from 'kysely';
import type { ControlledTransaction } from 'kysely';
import type { Db, DialectName } from '../../db/database.js';
import type { Database } from '../../db/schema.js';
import { SqliteThreadWriter } from './sqlite-writer.js';
import type { CollectWriter, Direction, StatsRow } from './collector.js';

export type Range = { from: number; to: number; direction?: Direction | undefined; mailbox?: string | undefined };
export type Figures = { messages: number; bytes: number };

/** 500 rows × 5 columns stays under every dialect's bound-parameter limit. */
const BATCH = 500;
/** SQLite: rows per prepared multi-row INSERT (one statement text, prepared once and reused). */
const SQLITE_ROWS = 100;
/**
 * SQLite: once a run has added this many rows (and at least half as many as the
 * table held), the rest goes in as a bulk load inside one transaction (in this
 * thread the secondary indexes are dropped and built again at the end).
 */
const BULK_MIN_ROWS = 50_000;
/** SQLite: a run reading at least this many bytes writes on a thread of its own (see StatsRepository.writer). */
const THREAD_MIN_BYTES = 16 << 20;
/** Log bytes per row, for the estimate of a run's rows (see StatsRepository.writer). */
const BYTES_PER_ROW = 1000;

const COLUMNS = '(msg_key, mailbox, direction, size, at)';
// OR IGNORE rather than ON CONFLICT DO NOTHING: a statement that cannot abort needs no statement journal (with
// ABORT, the default for NOT NULL, SQLite writes every page a multi-row INSERT changes to a temporary file first).
// Only the key can conflict: the rows never hold a null.
const sqliteInsert = (n: number) => `insert or ignore into stats_messages ${COLUMNS} values ${Array.from({ length: n }, () => '(?, ?, ?, ?, ?)').join(', ')}`;
const SQLITE_INSERT_MANY = sqliteInsert(SQLITE_ROWS);
const SQLITE_INSERT_ONE = sqliteInsert(1);

/** Thresholds of the SQLite writer (tests lower them to take the big-log paths with a small log). */
export type WriterTuning = { bulkMinRows?: number | undefined; threadMinBytes?: number | undefined };

/** A transaction or the database: what inserts run on. */
type Executor = Pick<Db, 'executeQuery' | 'insertInto'>;

/**
 * Writes one `stats collect` run's rows. Rows are added as they are read and
 * written in batches (`flush`), each batch in one transaction (one commit, one
 * fsync). On SQLite, a run that adds many rows (a first run over a big log)
 * switches to a bulk load: from then on one transaction holds the rest of the
 * run, the table's secondary indexes are dropped in it and built again before
 * it commits (building an index from sorted rows is several times cheaper than
 * keeping it up to date row by row). Other connections see the old indexes
 * until the commit (WAL), and a failure rolls everything back, indexes
 * included. `finish` saves the collector's state in the same transaction as
 * the last rows.
 */
export class RowWriter implements CollectWriter {
  private rows: StatsRow[] = [];
  private added = 0;
  private bulk: { trx: ControlledTransaction<Database>; indexes: string[] } | null = null;

  /** `bulkAfter`: rows after which a SQLite run becomes a bulk load (0: from its first batch). */
  constructor(private readonly db: Db, private readonly dialect: DialectName, private readonly bulkAfter: number) {}

  push(rows: readonly StatsRow[]): void {
    for (const r of rows) this.rows.push(r);
  }

  get buffered(): number {
    return this.rows.length;
  }

  /** Rows added so far (committed or in the open bulk load). */
  get addedRows(): number {
    return this.added;
  }

  /** Whether the run has switched to a bulk load. */
  get isBulk(): boolean {
    return this.bulk !== null;
  }

  /** Writes the buffered rows. */
  async flush(): Promise<void> {
    if (this.rows.length === 0) return;
    const rows = this.rows;
    this.rows = [];
    if (this.dialect === 'sqlite' && !this.bulk && this.bulkDue(rows.length)) await this.startBulk();
    if (this.bulk) this.added += await this.insert(this.bulk.trx, rows);
    else this.added += await this.db.transaction().execute((tx) => this.insert(tx, rows));
  }

  /** Writes what is left and saves the state with it; returns the rows added by the run. */
  async finish(stateJson: string, now: number): Promise<number> {
    try {
      await this.flush();
      if (this.bulk) {
        const { trx, indexes } = this.bulk;
        for (const ddl of indexes) await sql.raw(ddl).execute(trx);
        await saveState(trx, stateJson, now);
        await trx.commit().execute();
        this.bulk = null;
      } else {
        await this.db.transaction().execute((tx) => saveState(tx, stateJson, now));
      }
      return this.added;
    } catch (err) {
      await this.abort();
      throw err;
    }
  }

  /** Rolls back an open bulk load (nothing of it stays); batches already committed stay (collecting again skips them). */
  async abort(): Promise<void> {
    const bulk = this.bulk;
    this.bulk = null;
    if (bulk) await bulk.trx.rollback().execute().catch(() => undefined);
  }

  private bulkDue(next: number): boolean {
    return this.added + next >= this.bulkAfter;
  }

  private async startBulk(): Promise<void> {
    const trx = await this.db.startTransaction().execute();
    try {
      // The indexes as the schema created them (their own SQL), not a copy of their definitions.
      // Those that lead with the time are appended to (rows come in time order) and kept. (The writer thread keeps
      // them all: there the upkeep overlaps the reading, see sqlite-writer.ts.)
      const r = await sql<{ name: string; sql: string }>`select m.name, m.sql from sqlite_master m where m.type = 'index' and m.tbl_name = 'stats_messages' and m.sql is not null
        and (select i.name from pragma_index_info(m.name) i where i.seqno = 0) <> 'at'`.execute(trx);
      for (const ix of r.rows) await sql`drop index ${sql.id(ix.name)}`.execute(trx);
      this.bulk = { trx, indexes: r.rows.map((ix) => ix.sql) };
    } catch (err) {
      await trx.rollback().execute().catch(() => undefined);
      throw err;
    }
  }

  /** Inserts rows; a row already stored (the same message and mailbox) is left as it is. */
  private async insert(tx: Executor, rows: StatsRow[]): Promise<number> {
    let added = 0;
    if (this.dialect === 'sqlite') {
      // Prepared once (the statement cache keeps it by its text), bound per call: no query building per batch.
      let i = 0;
      for (; i + SQLITE_ROWS <= rows.length; i += SQLITE_ROWS) {
        const params: Array<string | number> = [];
        for (let j = i; j < i + SQLITE_ROWS; j++) {
          const r = rows[j] as StatsRow;
          params.push(r.msg_key, r.mailbox, r.direction, r.size, r.at);
        }
        added += Number((await tx.executeQuery(CompiledQuery.raw(SQLITE_INSERT_MANY, params))).numAffectedRows ?? 0);
      }
      for (; i < rows.length; i++) {
        const r = rows[i] as StatsRow;
        added += Number((await tx.executeQuery(CompiledQuery.raw(SQLITE_INSERT_ONE, [r.msg_key, r.mailbox, r.direction, r.size, r.at]))).numAffectedRows ?? 0);
      }
      return added;
    }
    for (let i = 0; i < rows.length; i += BATCH) {
      const q = tx.insertInto('stats_messages').values(rows.slice(i, i + BATCH));
      const r = this.dialect === 'mysql' ? await q.ignore().executeTakeFirst() : await q.onConflict((oc) => oc.doNothing()).executeTakeFirst();
      added += Number(r.numInsertedOrUpdatedRows ?? 0);
    }
    return added;
  }
}

async function saveState(tx: Pick<Db, 'deleteFrom' | 'insertInto'>, json: string, now: number): Promise<void> {
  await tx.deleteFrom('stats_collector').where('id', '=', 1).execute();
  await tx.insertInto('stats_collector').values({ id: 1, state_json: json, updated_at: now }).execute();
}

/** The statistics rows and the collector's saved state (its own two tables only). */
export class StatsRepository {
  constructor(private readonly db: Db, private readonly dialect: DialectName) {}

  /**
   * A writer for one collect run that will read about `bytes` of log. On
   * SQLite with a database file and at least `tuning.threadMinBytes` to read,
   * the rows are written on a thread of their own (SqliteThreadWriter) while
   * the log is read; otherwise in this thread (RowWriter): starting a thread
   * costs more than the few hundred lines of a timer run take. A SQLite run
   * becomes a bulk load after max(`tuning.bulkMinRows`, half the table's rows)
   * rows, or from its start when the bytes to read promise that many (a row
   * per 1,000 bytes: busy real logs have fewer, so the estimate errs toward
   * bulk, whose worst cost is rebuilding the indexes over at most twice the
   * rows expected).
   */
  async writer(bytes: number, tuning: WriterTuning = {}): Promise<CollectWriter> {
    if (this.dialect !== 'sqlite') return new RowWriter(this.db, this.dialect, Number.MAX_SAFE_INTEGER);
    // The table's size, cheaply: its largest rowid (rows pruned since only make it larger).
    const r = await sql<{ n: number | null }>`select max(rowid) as n from stats_messages`.execute(this.db);
    let after = Math.max(tuning.bulkMinRows ?? BULK_MIN_ROWS, Math.floor(Number(r.rows[0]?.n ?? 0) / 2));
    if (Math.floor(bytes / BYTES_PER_ROW) >= after) after = 0;
    const file = bytes >= (tuning.threadMinBytes ?? THREAD_MIN_BYTES) ? await SqliteThreadWriter.fileOf(this.db) : null;
    if (file === null) return new RowWriter(this.db, this.dialect, after);
    return new SqliteThreadWriter(file, after, SQLITE_ROWS, SQLITE_INSERT_MANY, SQLITE_INSERT_ONE);
  }

  /** Inserts rows (one transaction, in this thread); a row already stored is left as it is. Returns the rows added. */
  async insert(rows: StatsRow[]): Promise<number> {
    const w = new RowWriter(this.db, this.dialect, Number.MAX_SAFE_INTEGER);
    w.push(rows);
    await w.flush();
    return w.addedRows;
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
    await this.db.transaction().execute((tx) => saveState(tx, json, now));
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
