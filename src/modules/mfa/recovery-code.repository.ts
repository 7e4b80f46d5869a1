import type { Db } from '../../db/database.js';
import type { RecoveryCodeTable } from './tables.js';

export class RecoveryCodeRepository {
  constructor(private readonly db: Db) {}

  /** The old set goes and the new one comes in one transaction: no moment with both or neither. */
  async replaceAll(rows: RecoveryCodeTable[]): Promise<void> {
    await this.db.transaction().execute(async (tx) => {
      await tx.deleteFrom('admin_recovery_codes').execute();
      if (rows.length > 0) await tx.insertInto('admin_recovery_codes').values(rows).execute();
    });
  }

  async deleteAll(): Promise<void> {
    await this.db.deleteFrom('admin_recovery_codes').execute();
  }

  async countUnused(): Promise<number> {
    const r = await this.db
      .selectFrom('admin_recovery_codes')
      .select((eb) => eb.fn.countAll<string | number>().as('n'))
      .where('used_at', 'is', null)
      .executeTakeFirst();
    return Number(r?.n ?? 0);
  }

  /**
   * Marks the code with this hash as used, only if it was not: the check and
   * the write are one statement, so of parallel uses exactly one wins, on any
   * instance.
   */
  async markUsed(codeHash: string, at: number): Promise<boolean> {
    const r = await this.db
      .updateTable('admin_recovery_codes')
      .set({ used_at: at })
      .where('code_hash', '=', codeHash)
      .where('used_at', 'is', null)
      .executeTakeFirst();
    return Number(r.numUpdatedRows) === 1;
  }
}
