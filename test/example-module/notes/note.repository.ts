import type { Db } from '../../db/database.js';
import type { DialectName } from '../../db/dialect.js';
import { insertedId } from '../../db/insert-id.js';

export type NoteRow = { id: number; domain_id: number; text: string; created_at: number };

/** The module's own table, and nothing else. */
export class NoteRepository {
  constructor(private readonly db: Db, private readonly dialect: DialectName) {}

  /** The new note's id, as the database numbered it (the same on every dialect). */
  insert(domainId: number, text: string, now: number): Promise<number> {
    return insertedId(this.dialect, this.db.insertInto('domain_notes').values({ domain_id: domainId, text, created_at: now }));
  }

  async list(domainId: number): Promise<NoteRow[]> {
    const rows = await this.db.selectFrom('domain_notes').selectAll().where('domain_id', '=', domainId).orderBy('id').execute();
    // PostgreSQL answers bigint columns as text.
    return rows.map((r) => ({ ...r, id: Number(r.id), created_at: Number(r.created_at) }));
  }

  async delete(domainId: number, id: number): Promise<boolean> {
    const r = await this.db.deleteFrom('domain_notes').where('domain_id', '=', domainId).where('id', '=', id).executeTakeFirst();
    return Number(r.numDeletedRows) > 0;
  }

  /** In the transaction that deletes the domain (`tx`). */
  async removeForDomain(tx: Db, domainId: number): Promise<void> {
    await tx.deleteFrom('domain_notes').where('domain_id', '=', domainId).execute();
  }
}
