import { randomBytes } from 'node:crypto';
import { sql } from 'kysely';
import type { Db } from '../../db/database.js';
import type { AppPasswordTable } from './tables.js';
import type { AppPasswordCreations, AppPasswordLimits } from './creation-limits.js';
import { AppError, badRequest } from '../../shared/errors.js';
import { requireIsoTime } from '../../shared/iso-time.js';
import { refuseControlChars } from '../../shared/mail-names.js';
import type { Clock } from '../../shared/clock.js';
import { constantTimeEqual, hmacSha256 } from '../../shared/crypto.js';
import type { AccountLookup, LoginAccount } from '../accounts/index.js';

export type { AppPasswordCreated, AppPasswordView } from './schema.js';
import type { AppPasswordCreated, AppPasswordView } from './schema.js';
import { APP_PASSWORD_NAME_MAX } from './schema.js';

// `<id>.<secret>`: 12 + 32 characters of base32 (60 + 160 random bits); only
// letters and digits, so every mail client and IMAP LOGIN quoting takes it.
const APP_PASSWORD = /^([a-z2-7]{12})\.([a-z2-7]{32})$/;
const B32 = 'abcdefghijklmnopqrstuvwxyz234567';

function base32(bytes: Buffer, length: number): string {
  let out = '';
  for (const b of bytes) out += B32[b & 31];
  return out.slice(0, length);
}

/** The account of a mail login, with the app password named in the password, if it is the account's. */
type LoginRow = LoginAccount & { app_secret_hash: string | null; app_revoked_at: number | null; app_expires_at: number | null };

const iso = (ms: number | null): string | null => (ms === null ? null : new Date(ms).toISOString());

export class AppPasswordService {
  constructor(
    private readonly db: Db,
    private readonly accounts: AccountLookup,
    /** The HMAC key of app-password hashes, read (or made) once, on first use. */
    private readonly hashKey: () => Promise<Buffer>,
    private readonly clock: Clock,
    /** The limits in force, read on every creation (a changed limit holds at once). */
    private readonly limits: () => AppPasswordLimits,
    private readonly creations: AppPasswordCreations,
  ) {}

  private present(r: AppPasswordTable): AppPasswordView {
    const now = this.clock.now();
    return {
      id: r.id,
      name: r.name,
      created_at: new Date(r.created_at).toISOString(),
      expires_at: iso(r.expires_at),
      last_used_at: iso(r.last_used_at),
      last_used_ip: r.last_used_ip,
      active: r.revoked_at === null && (r.expires_at === null || r.expires_at > now),
    };
  }

  async hashSecret(secret: string): Promise<string> {
    return hmacSha256(await this.hashKey(), secret).toString('hex');
  }

  /** The account is being deleted: its app passwords go in the same transaction. */
  async removeForAccount(accountId: number, tx: Db): Promise<void> {
    await tx.deleteFrom('mailbox_app_passwords').where('account_id', '=', accountId).execute();
  }

  /** Revokes every app password of the account, in the caller's transaction (a password reset that asks for it). */
  async revokeAllForAccount(accountId: number, tx: Db): Promise<void> {
    await tx.updateTable('mailbox_app_passwords').set({ revoked_at: this.clock.now() }).where('account_id', '=', accountId).where('revoked_at', 'is', null).execute();
  }

  async create(account: string | number, input: { name: string; expires_at?: string | undefined }): Promise<AppPasswordCreated> {
    const acc = await this.accounts.resolve(account);
    refuseControlChars('name', input.name);
    const name = input.name.trim();
    if (name === '' || name.length > APP_PASSWORD_NAME_MAX) throw badRequest(`name must be 1 to ${APP_PASSWORD_NAME_MAX} characters, e.g. "Thunderbird on laptop"`);
    let expiresAt: number | null = null;
    if (input.expires_at !== undefined) {
      expiresAt = requireIsoTime('expires_at', input.expires_at);
      if (expiresAt <= this.clock.now()) throw badRequest('expires_at must be in the future');
    }
    const id = base32(randomBytes(12), 12);
    const secret = base32(randomBytes(32), 32);
    const row: AppPasswordTable = {
      id,
      account_id: acc.id,
      name,
      secret_hash: await this.hashSecret(secret),
      created_at: this.clock.now(),
      expires_at: expiresAt,
      last_used_at: null,
      last_used_ip: null,
      revoked_at: null,
    };
    const { perMailbox, perHour } = this.limits();
    await this.creations.consume(acc.id, perHour);
    // Inserted, then counted: of creations racing for the last place none stays over the cap (each sees the others' rows once committed).
    await this.db.insertInto('mailbox_app_passwords').values(row).execute();
    if ((await this.held(acc.id)) > perMailbox) {
      await this.db.deleteFrom('mailbox_app_passwords').where('id', '=', id).execute();
      await this.creations.giveBack(acc.id);
      throw new AppError('conflict', `${acc.address} already has ${perMailbox} app passwords, the most a mailbox may have (MAILSVC_APP_PASSWORDS_PER_MAILBOX): revoke one it no longer uses, expired ones included`);
    }
    return { ...this.present(row), password: `${id}.${secret}` };
  }

  /** The account's app passwords that are not revoked (expired ones included: they are listed until revoked). */
  private async held(accountId: number): Promise<number> {
    const r = await this.db
      .selectFrom('mailbox_app_passwords')
      .select((e) => e.fn.countAll<number>().as('n'))
      .where('account_id', '=', accountId)
      .where('revoked_at', 'is', null)
      .executeTakeFirstOrThrow();
    return Number(r.n);
  }

  async list(account: string | number): Promise<AppPasswordView[]> {
    const acc = await this.accounts.resolve(account);
    const rows = await this.db
      .selectFrom('mailbox_app_passwords')
      .selectAll()
      .where('account_id', '=', acc.id)
      .where('revoked_at', 'is', null)
      .orderBy('created_at')
      .execute();
    return rows.map((r) => this.present(r));
  }

  /** Revokes, and ends the account's open IMAP and POP sessions. */
  async revoke(account: string | number, id: string): Promise<void> {
    const acc = await this.accounts.resolve(account);
    const r = await this.db
      .updateTable('mailbox_app_passwords')
      .set({ revoked_at: this.clock.now() })
      .where('id', '=', id)
      .where('account_id', '=', acc.id)
      .where('revoked_at', 'is', null)
      .executeTakeFirst();
    if (Number(r.numUpdatedRows) !== 1) throw new AppError('not_found', `App password ${id} not found for ${acc.address}`);
    await this.accounts.kick(acc.address);
  }

  /**
   * The account of a mail login and, when the password has an app password's
   * shape, whether it is a valid app password of that account: one query
   * (the account, its domain's state and that one app password by id, joined)
   * and one keyed hash compared in constant time, however many app passwords
   * exist. Records nothing: the caller records the use (recordUse) once it
   * has answered.
   */
  async findLogin(address: string, password: string): Promise<{ account: LoginAccount; appPasswordId: string | null } | undefined> {
    const m = APP_PASSWORD.exec(password);
    // No app password has an empty id, so the join then finds nothing.
    const [, id = '', secret = ''] = m ?? [];
    // Written as SQL rather than built: on SQLite this lookup (with the HMAC)
    // took about 49 µs per login when Kysely built and compiled the join each
    // time, about 14 µs as SQL text that hits the statement cache (measured
    // in-process, 2-core machine).
    const { rows } = await sql<LoginRow>`
      select a.*, d.active as domain_active, p.secret_hash as app_secret_hash, p.revoked_at as app_revoked_at, p.expires_at as app_expires_at
      from accounts a
      inner join domains d on d.id = a.domain_id
      left join mailbox_app_passwords p on p.id = ${id} and p.account_id = a.id
      where a.address = ${address}`.execute(this.db);
    const [row] = rows;
    if (!row) return undefined;
    const { app_secret_hash: hash, app_revoked_at: revokedAt, app_expires_at: expiresAt, ...account } = row;
    const usable = hash !== null && revokedAt === null && (expiresAt === null || expiresAt > this.clock.now());
    const valid = usable && constantTimeEqual(await this.hashSecret(secret), hash);
    return { account, appPasswordId: valid ? id : null };
  }

  /** Records that an app password was just used for a mail login, and from where. */
  async recordUse(id: string, ip: string): Promise<void> {
    await this.db.updateTable('mailbox_app_passwords').set({ last_used_at: this.clock.now(), last_used_ip: ip.slice(0, 64) || null }).where('id', '=', id).execute();
  }
}
