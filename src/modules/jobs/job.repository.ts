import type { Db } from '../../db/database.js';
import type { JobTable } from './tables.js';
import type { JobState } from './schema.js';

const affected = (r: { numUpdatedRows: bigint }): number => Number(r.numUpdatedRows);

/**
 * The jobs table. Every state change is a conditional UPDATE whose affected
 * row count says whether this process won: that is the lock, and it works the
 * same on SQLite, PostgreSQL and MariaDB.
 */
export class JobRepository {
  constructor(private readonly db: Db) {}

  async insert(row: Pick<JobTable, 'id' | 'kind' | 'input' | 'created_at'>): Promise<void> {
    await this.db.insertInto('jobs').values({ ...row, state: 'queued', progress: 0, message: 'queued' }).execute();
  }

  get(id: string): Promise<JobTable | undefined> {
    return this.db.selectFrom('jobs').selectAll().where('id', '=', id).executeTakeFirst();
  }

  /** Takes a queued job for `owner`; false when another process took it first. */
  async claim(id: string, owner: string, now: number): Promise<boolean> {
    const r = await this.db
      .updateTable('jobs')
      .set({ state: 'running', owner, started_at: now, heartbeat_at: now, message: 'started' })
      .where('id', '=', id)
      .where('state', '=', 'queued')
      .executeTakeFirst();
    return affected(r) === 1;
  }

  /** Heartbeat, with progress when given; false when the job is no longer this owner's running job. */
  async touch(id: string, owner: string, now: number, progress?: { fraction: number; message: string }): Promise<boolean> {
    const r = await this.db
      .updateTable('jobs')
      .set({ heartbeat_at: now, ...(progress ? { progress: progress.fraction, message: progress.message } : {}) })
      .where('id', '=', id)
      .where('owner', '=', owner)
      .where('state', '=', 'running')
      .executeTakeFirst();
    return affected(r) === 1;
  }

  async finish(id: string, owner: string, now: number, end: { state: Extract<JobState, 'succeeded' | 'failed'>; message: string; result: string | null; error: string | null }): Promise<boolean> {
    const r = await this.db
      .updateTable('jobs')
      .set({ ...end, ...(end.state === 'succeeded' ? { progress: 1 } : {}), finished_at: now, heartbeat_at: now })
      .where('id', '=', id)
      .where('owner', '=', owner)
      .where('state', '=', 'running')
      .executeTakeFirst();
    return affected(r) === 1;
  }

  /** Marks running jobs whose heartbeat is older than `staleBefore` failed (one job, or all); returns how many. */
  async failStale(staleBefore: number, now: number, message: string, id?: string): Promise<number> {
    let q = this.db
      .updateTable('jobs')
      .set({ state: 'failed', message, error: message, finished_at: now })
      .where('state', '=', 'running')
      .where('heartbeat_at', '<', staleBefore);
    if (id !== undefined) q = q.where('id', '=', id);
    return affected(await q.executeTakeFirst());
  }

  async queuedOf(kinds: readonly string[]): Promise<string[]> {
    if (kinds.length === 0) return [];
    const rows = await this.db.selectFrom('jobs').select('id').where('state', '=', 'queued').where('kind', 'in', kinds).orderBy('created_at').execute();
    return rows.map((r) => r.id);
  }
}
