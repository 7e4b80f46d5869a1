import type { Transaction } from 'kysely';
import type { Db } from '../../db/database.js';
import type { AdminMfaTable, Database } from '../../db/schema.js';

export type AdminMfaRow = AdminMfaTable;
type Executor = Db | Transaction<Database>;

/** The single admin MFA record (id 1, created by the first migration). */
export class MfaRepository {
  constructor(private readonly db: Db) {}

  async get(tx: Executor = this.db): Promise<AdminMfaRow> {
    const row = await tx.selectFrom('admin_mfa').selectAll().where('id', '=', 1).executeTakeFirst();
    if (!row) throw new Error('admin_mfa row missing: run mailsvc db migrate');
    return row;
  }

  async update(changes: Partial<Omit<AdminMfaRow, 'id'>>, now: number, tx: Executor = this.db): Promise<void> {
    await tx.updateTable('admin_mfa').set({ ...changes, updated_at: now }).where('id', '=', 1).execute();
  }

  /**
   * Records a TOTP time step as used, only if it is newer than the last one:
   * the database makes the check and the write one step, so a code can be
   * accepted once, on one instance, whatever runs in parallel.
   */
  async acceptTotpStep(step: number, now: number): Promise<boolean> {
    const r = await this.db
      .updateTable('admin_mfa')
      .set({ totp_last_step: step, updated_at: now })
      .where('id', '=', 1)
      .where('totp_enabled', '=', 1)
      .where((eb) => eb.or([eb('totp_last_step', 'is', null), eb('totp_last_step', '<', step)]))
      .executeTakeFirst();
    return Number(r.numUpdatedRows) === 1;
  }

  /** Turns a pending enrolment on, only if the secret is still the one the code was checked against. */
  async confirmPending(sealedSecret: string, step: number, now: number): Promise<boolean> {
    const r = await this.db
      .updateTable('admin_mfa')
      .set({ totp_enabled: 1, totp_confirmed_at: now, totp_last_step: step, updated_at: now })
      .where('id', '=', 1)
      .where('totp_enabled', '=', 0)
      .where('totp_secret', '=', sealedSecret)
      .executeTakeFirst();
    return Number(r.numUpdatedRows) === 1;
  }

  transaction<T>(fn: (tx: Transaction<Database>) => Promise<T>): Promise<T> {
    return this.db.transaction().execute(fn);
  }
}
