import type { Transaction } from 'kysely';
import type { Db } from '../../db/database.js';
import type { Database } from '../../db/schema.js';
import type { AdminMfaTable } from './tables.js';

export type AdminMfaRow = AdminMfaTable;
type Executor = Db | Transaction<Database>;

/** The single admin MFA record (id 1, created by the first migration). */
export class MfaRepository {
  private cached: AdminMfaRow | null = null;

  /**
   * `cache`: keep the record in memory between writes. Only for a single
   * instance (no Redis): there every write goes through this object, or
   * through a host command that signals the service to drop it.
   */
  constructor(private readonly db: Db, private readonly cache = false) {}

  async get(tx?: Executor): Promise<AdminMfaRow> {
    if (tx === undefined && this.cached) return this.cached;
    const row = await (tx ?? this.db).selectFrom('admin_mfa').selectAll().where('id', '=', 1).executeTakeFirst();
    if (!row) throw new Error('admin_mfa row missing: run mailsvc db migrate');
    if (tx === undefined && this.cache) this.cached = row;
    return row;
  }

  dropCache(): void {
    this.cached = null;
  }

  async update(changes: Partial<Omit<AdminMfaRow, 'id'>>, now: number, tx: Executor = this.db): Promise<void> {
    this.cached = null;
    await tx.updateTable('admin_mfa').set({ ...changes, updated_at: now }).where('id', '=', 1).execute();
    this.cached = null;
  }

  /**
   * Records a TOTP time step as used, only if it is newer than the last one:
   * the database makes the check and the write one step, so a code can be
   * accepted once, on one instance, whatever runs in parallel.
   */
  async acceptTotpStep(step: number, now: number): Promise<boolean> {
    this.cached = null;
    const r = await this.db
      .updateTable('admin_mfa')
      .set({ totp_last_step: step, updated_at: now })
      .where('id', '=', 1)
      .where('totp_enabled', '=', 1)
      .where((eb) => eb.or([eb('totp_last_step', 'is', null), eb('totp_last_step', '<', step)]))
      .executeTakeFirst();
    // A read that ran during the write may have cached the old row.
    this.cached = null;
    return Number(r.numUpdatedRows) === 1;
  }

  /** Turns a pending enrolment on, only if the secret is still the one the code was checked against. */
  async confirmPending(sealedSecret: string, step: number, now: number): Promise<boolean> {
    this.cached = null;
    const r = await this.db
      .updateTable('admin_mfa')
      .set({ totp_enabled: 1, totp_confirmed_at: now, totp_last_step: step, updated_at: now })
      .where('id', '=', 1)
      .where('totp_enabled', '=', 0)
      .where('totp_secret', '=', sealedSecret)
      .executeTakeFirst();
    // A read that ran during the write may have cached the old row.
    this.cached = null;
    return Number(r.numUpdatedRows) === 1;
  }

  async transaction<T>(fn: (tx: Transaction<Database>) => Promise<T>): Promise<T> {
    this.cached = null;
    try {
      return await this.db.transaction().execute(fn);
    } finally {
      this.cached = null;
    }
  }
}
