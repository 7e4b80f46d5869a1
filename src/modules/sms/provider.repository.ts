import type { Db, DialectName } from '../../db/database.js';
import type { SmsProviderTable } from './tables.js';

export type ProviderRow = SmsProviderTable;

export class ProviderRepository {
  constructor(private readonly db: Db, private readonly dialect: DialectName) {}

  async list(): Promise<ProviderRow[]> {
    return this.db.selectFrom('sms_providers').selectAll().execute();
  }

  async get(code: string): Promise<ProviderRow | undefined> {
    return this.db.selectFrom('sms_providers').selectAll().where('code', '=', code).executeTakeFirst();
  }

  /**
   * Creates the record from its defaults when absent, then applies the
   * changes, in one transaction. The create is an insert-or-nothing, so two
   * parallel first PUTs cannot collide on the primary key.
   */
  async createThenUpdate(defaults: ProviderRow, changes: Partial<Omit<ProviderRow, 'code'>>): Promise<ProviderRow> {
    return this.db.transaction().execute(async (tx) => {
      const insert = tx.insertInto('sms_providers').values(defaults);
      if (this.dialect === 'mysql') await insert.ignore().execute();
      else await insert.onConflict((oc) => oc.column('code').doNothing()).execute();
      if (Object.keys(changes).length > 0) {
        await tx.updateTable('sms_providers').set(changes).where('code', '=', defaults.code).execute();
      }
      return tx.selectFrom('sms_providers').selectAll().where('code', '=', defaults.code).executeTakeFirstOrThrow();
    });
  }

  async updateSecrets(code: string, secrets: { client_secret: string | null; api_key: string | null }): Promise<void> {
    await this.db.updateTable('sms_providers').set(secrets).where('code', '=', code).execute();
  }
}
