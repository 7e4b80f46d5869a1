import type { Db } from '../../db/database.js';
import type { TlsDeployTable, TlsPortTable } from './tables.js';

export type PortRow = TlsPortTable;
export type DeployRow = Omit<TlsDeployTable, 'id'> & { id: number };

/** The tls module's own tables: what each port served last, and the deploys. */
export class TlsRepository {
  constructor(private readonly db: Db) {}

  /** Every port's row replaced by `rows` (a check reads every configured port), in one transaction. */
  async replacePorts(rows: readonly PortRow[]): Promise<void> {
    await this.db.transaction().execute(async (tx) => {
      await tx.deleteFrom('tls_ports').execute();
      if (rows.length > 0) await tx.insertInto('tls_ports').values([...rows]).execute();
    });
  }

  /** The rows of these ports replaced (a deploy's proof reads some ports only), in one transaction. */
  async upsertPorts(rows: readonly PortRow[]): Promise<void> {
    if (rows.length === 0) return;
    await this.db.transaction().execute(async (tx) => {
      await tx.deleteFrom('tls_ports').where('id', 'in', rows.map((r) => r.id)).execute();
      await tx.insertInto('tls_ports').values([...rows]).execute();
    });
  }

  async ports(): Promise<PortRow[]> {
    const rows = await this.db.selectFrom('tls_ports').selectAll().orderBy('port').orderBy('kind').execute();
    return rows.map((r) => ({ ...r, port: Number(r.port), not_after: r.not_after === null ? null : Number(r.not_after), checked_at: Number(r.checked_at) }));
  }

  async addDeploy(row: Omit<TlsDeployTable, 'id'>): Promise<void> {
    await this.db.insertInto('tls_deploys').values(row).execute();
  }

  async lastDeploy(): Promise<DeployRow | null> {
    const r = await this.db.selectFrom('tls_deploys').selectAll().orderBy('created_at', 'desc').orderBy('id', 'desc').limit(1).executeTakeFirst();
    return r ? { ...r, id: Number(r.id), ok: Number(r.ok), created_at: Number(r.created_at) } : null;
  }
}
