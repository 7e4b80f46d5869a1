import type { Selectable } from 'kysely';
import type { Db } from '../../db/database.js';
import type { AcmeAccountTable, CertificateTable } from './tables.js';

export type CertRow = Selectable<CertificateTable>;
export type AcmeAccountRow = Selectable<AcmeAccountTable>;

const NUMERIC = ['not_before', 'not_after', 'ari_start', 'ari_end', 'ari_next_check', 'issued_at', 'revoked_at', 'last_attempt_at', 'next_attempt_at', 'pending_since'] as const;
const n = (v: unknown): number | null => (v === null || v === undefined ? null : Number(v));

/** PostgreSQL answers bigint columns as text: every time is a number here. */
function normalize(r: CertRow): CertRow {
  const out = { ...r, failures: Number(r.failures), created_at: Number(r.created_at), updated_at: Number(r.updated_at) };
  for (const k of NUMERIC) out[k] = n(r[k]);
  return out;
}

/** The certs module's own tables, and nothing else. */
export class CertRepository {
  constructor(private readonly db: Db) {}

  async list(): Promise<CertRow[]> {
    return (await this.db.selectFrom('certificates').selectAll().orderBy('name').execute()).map(normalize);
  }

  async get(name: string): Promise<CertRow | undefined> {
    const r = await this.db.selectFrom('certificates').selectAll().where('name', '=', name).executeTakeFirst();
    return r ? normalize(r) : undefined;
  }

  /** The row of `name`, made (without a certificate) when there is none. */
  async ensure(name: string, names: readonly string[], now: number): Promise<CertRow> {
    await this.db.transaction().execute(async (tx) => {
      const there = await tx.selectFrom('certificates').select('name').where('name', '=', name).executeTakeFirst();
      if (!there) await tx.insertInto('certificates').values({ name, names: JSON.stringify(names), failures: 0, created_at: now, updated_at: now }).execute();
    });
    return (await this.get(name)) as CertRow;
  }

  async update(name: string, values: Partial<Omit<CertificateTable, 'name' | 'created_at'>>): Promise<void> {
    await this.db.updateTable('certificates').set(values).where('name', '=', name).execute();
  }

  async account(id: string): Promise<AcmeAccountRow | undefined> {
    return this.db.selectFrom('acme_accounts').selectAll().where('id', '=', id).executeTakeFirst();
  }

  /** Stores a new account key unless another process stored one first; answers the row that holds. */
  async putAccount(row: AcmeAccountTable): Promise<AcmeAccountRow> {
    await this.db.transaction().execute(async (tx) => {
      const there = await tx.selectFrom('acme_accounts').select('id').where('id', '=', row.id).executeTakeFirst();
      if (!there) await tx.insertInto('acme_accounts').values(row).execute();
    });
    return (await this.account(row.id)) as AcmeAccountRow;
  }

  async setAccountUrl(id: string, url: string): Promise<void> {
    await this.db.updateTable('acme_accounts').set({ account_url: url }).where('id', '=', id).execute();
  }
}
