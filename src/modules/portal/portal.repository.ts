import type { Db } from '../../db/database.js';
import type { PortalDisabledTable, PortalSessionTable, PortalTotpTable } from './tables.js';

/** The portal's own tables only. */
export class PortalRepository {
  constructor(private readonly db: Db) {}

  insertSession(row: PortalSessionTable): Promise<unknown> {
    return this.db.insertInto('portal_sessions').values(row).execute();
  }
  findSession(idHash: string): Promise<PortalSessionTable | undefined> {
    return this.db.selectFrom('portal_sessions').selectAll().where('id_hash', '=', idHash).executeTakeFirst();
  }
  touchSession(idHash: string, now: number): Promise<unknown> {
    return this.db.updateTable('portal_sessions').set({ last_seen_at: now }).where('id_hash', '=', idHash).execute();
  }
  removeSession(idHash: string): Promise<unknown> {
    return this.db.deleteFrom('portal_sessions').where('id_hash', '=', idHash).execute();
  }
  /** Every session of the mailbox but `keep` (a password change keeps the session that made it). */
  removeSessionsOf(accountId: number, keep?: string, tx: Db = this.db): Promise<unknown> {
    let q = tx.deleteFrom('portal_sessions').where('account_id', '=', accountId);
    if (keep !== undefined) q = q.where('id_hash', '<>', keep);
    return q.execute();
  }
  pruneSessions(now: number, idleBefore: number): Promise<unknown> {
    return this.db.deleteFrom('portal_sessions').where((e) => e.or([e('expires_at', '<=', now), e('last_seen_at', '<=', idleBefore)])).execute();
  }

  findTotp(accountId: number): Promise<PortalTotpTable | undefined> {
    return this.db.selectFrom('portal_totp').selectAll().where('account_id', '=', accountId).executeTakeFirst();
  }
  /** A new enrolment replaces an unconfirmed one; never a confirmed one (the caller checks). */
  async putTotp(row: PortalTotpTable): Promise<void> {
    await this.db.transaction().execute(async (tx) => {
      await tx.deleteFrom('portal_totp').where('account_id', '=', row.account_id).where('confirmed', '=', 0).execute();
      await tx.insertInto('portal_totp').values(row).execute();
    });
  }
  /** Confirms or records a used step, only if the step is newer than the last: false when another request used it first. */
  async useTotpStep(accountId: number, step: number, confirm: boolean): Promise<boolean> {
    const r = await this.db
      .updateTable('portal_totp')
      .set(confirm ? { last_step: step, confirmed: 1 } : { last_step: step })
      .where('account_id', '=', accountId)
      .where('last_step', '<', step)
      .executeTakeFirst();
    return Number(r.numUpdatedRows) === 1;
  }
  removeTotp(accountId: number, tx: Db = this.db): Promise<unknown> {
    return tx.deleteFrom('portal_totp').where('account_id', '=', accountId).execute();
  }

  async findRules(accountId: number): Promise<string | undefined> {
    return (await this.db.selectFrom('portal_mail_rules').select('rules').where('account_id', '=', accountId).executeTakeFirst())?.rules;
  }
  async putRules(accountId: number, rules: string, now: number): Promise<void> {
    await this.db.transaction().execute(async (tx) => {
      await tx.deleteFrom('portal_mail_rules').where('account_id', '=', accountId).execute();
      await tx.insertInto('portal_mail_rules').values({ account_id: accountId, rules, updated_at: now }).execute();
    });
  }
  removeRules(accountId: number, tx: Db = this.db): Promise<unknown> {
    return tx.deleteFrom('portal_mail_rules').where('account_id', '=', accountId).execute();
  }

  listDisabled(): Promise<PortalDisabledTable[]> {
    return this.db.selectFrom('portal_disabled').selectAll().orderBy('kind').orderBy('name').execute();
  }
  async isDisabled(address: string, domain: string): Promise<boolean> {
    const row = await this.db
      .selectFrom('portal_disabled')
      .select('name')
      .where((e) => e.or([e.and([e('kind', '=', 'mailbox'), e('name', '=', address)]), e.and([e('kind', '=', 'domain'), e('name', '=', domain)])]))
      .executeTakeFirst();
    return row !== undefined;
  }
  /** True when it changed something. */
  async setDisabled(kind: PortalDisabledTable['kind'], name: string, disabled: boolean, now: number, tx: Db = this.db): Promise<boolean> {
    const had = await tx.selectFrom('portal_disabled').select('name').where('kind', '=', kind).where('name', '=', name).executeTakeFirst();
    if (disabled === (had !== undefined)) return false;
    if (disabled) await tx.insertInto('portal_disabled').values({ kind, name, created_at: now }).execute();
    else await tx.deleteFrom('portal_disabled').where('kind', '=', kind).where('name', '=', name).execute();
    return true;
  }
}
