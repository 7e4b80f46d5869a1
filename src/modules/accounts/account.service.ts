import type { Logger } from 'pino';
import type { Limits } from '../../shared/send-rate.js';
import { AppError, badRequest, queryError } from '../../shared/errors.js';
import type { Clock } from '../../shared/clock.js';
import { normalizeAddress, refuseControlChars } from '../../shared/mail-names.js';
import { isUniqueViolation } from '../../shared/db-errors.js';
import type { Page, Paged } from '../../shared/paging.js';
import type { MailSessionKicker } from '../../adapters/dovecot/doveadm.js';
import type { DomainLookup } from '../domains/index.js';
import type { RoutingGuard } from '../routing/index.js';
import { beginDeletion } from '../deletion.js';
import type { EventSource } from '../module-types.js';
import type { AccountInput, AccountPatch, AccountView } from './schema.js';
import { ACCOUNT_SORT, MAX_QUOTA_BYTES, MAX_SEND_RATE } from './schema.js';
import { sortOf } from '../sort.schema.js';
import type { AccountChanges, AccountRepository, AccountRow } from './account.repository.js';
import { SEND_RATE_FIELDS } from '../../shared/send-rate.js';
import type { SendRateField } from '../../shared/send-rate.js';
import { hashMailPassword } from './mail-password.js';

export type SendRates = Record<SendRateField, number>;
export type { AccountInput, AccountPatch, AccountView } from './schema.js';

/** Told when an account's effective send limits may have changed or it is gone. */
export type SendLimitsListener = {
  /** The global defaults (MAILSVC_SEND_RATE_*) that 0 on an account inherits. */
  readonly defaults: Limits;
  accountChanged(row: AccountRow): Promise<void>;
  accountRemoved(address: string): Promise<void>;
};

/** `account.deleting`: an account is being deleted; other modules remove their rows that hang on it (app passwords) in the same transaction. */
export type AccountDeleting = { id: number; address: string };

/**
 * `account.password-changed`: an account's password was just set (by the
 * administrator, the CLI or the user); other modules end what the old password
 * opened (portal sessions; app passwords when asked) in the same transaction.
 */
export type AccountPasswordChanged = {
  id: number;
  address: string;
  /** Revoke every app password of the account too (a reset after a compromise). */
  revokeAppPasswords: boolean;
  /** The portal session that made the change, which keeps going (a user changing the password in the portal). */
  keepSession?: string | undefined;
};

/** How a password is set, beyond the password. */
export type PasswordOptions = { revokeAppPasswords?: boolean | undefined; keepSession?: string | undefined };


export function presentAccount(r: AccountRow): AccountView {
  const rates = Object.fromEntries(SEND_RATE_FIELDS.map((f) => [f, r[f]])) as SendRates;
  return {
    id: r.id,
    address: r.address,
    domain: r.address.slice(r.address.lastIndexOf('@') + 1),
    display_name: r.display_name,
    quota_bytes: r.quota_bytes,
    active: r.active === 1,
    require_app_password: r.require_app_password === 1,
    ...rates,
    created_at: new Date(r.created_at).toISOString(),
    updated_at: new Date(r.updated_at).toISOString(),
  };
}

function checkRanges(input: AccountPatch): void {
  const q = input.quota_bytes;
  if (q !== undefined && (!Number.isSafeInteger(q) || q < 0 || q > MAX_QUOTA_BYTES)) {
    throw badRequest(`quota_bytes must be a whole number from 0 (no quota) to ${MAX_QUOTA_BYTES}`);
  }
  for (const f of SEND_RATE_FIELDS) {
    const v = input[f];
    if (v !== undefined && (!Number.isSafeInteger(v) || v < 0 || v > MAX_SEND_RATE)) {
      throw badRequest(`${f} must be a whole number from 0 (inherit the global default) to ${MAX_SEND_RATE}`);
    }
  }
  refuseControlChars('display_name', input.display_name);
  if (input.display_name !== undefined && input.display_name.length > 255) {
    throw badRequest('display_name must be at most 255 characters, without control characters');
  }
}

export class AccountService {
  constructor(
    private readonly repo: AccountRepository,
    private readonly domains: DomainLookup,
    private readonly routing: RoutingGuard,
    private readonly kicker: MailSessionKicker,
    private readonly limits: SendLimitsListener,
    private readonly clock: Clock,
    private readonly log: Logger,
    private readonly deleting?: EventSource<AccountDeleting>,
    private readonly passwordChanged?: EventSource<AccountPasswordChanged>,
  ) {}

  async create(input: AccountInput): Promise<AccountView> {
    const { address, localPart, domain } = normalizeAddress(input.address);
    checkRanges(input);
    const dom = await this.domains.requireExisting(domain);
    const now = this.clock.now();
    const rates = Object.fromEntries(SEND_RATE_FIELDS.map((f) => [f, input[f] ?? 0])) as SendRates;
    const passwordHash = await hashMailPassword(input.password);
    try {
      // Under the routing lock, so no alias can appear at this address meanwhile.
      const row = await this.routing.change(async (tx, routes) => {
        if ((await routes.addressUse(address)) === 'alias') {
          throw new AppError('conflict', `${address} is an alias: an address is either a mailbox or an alias, never both (delete the alias first)`);
        }
        return this.repo.insert({
          domain_id: dom.id,
          local_part: localPart,
          address,
          display_name: input.display_name ?? '',
          password_hash: passwordHash,
          quota_bytes: input.quota_bytes ?? 0,
          active: input.active === false ? 0 : 1,
          require_app_password: input.require_app_password ? 1 : 0,
          ...rates,
          created_at: now,
          updated_at: now,
        }, tx);
      });
      await this.limits.accountChanged(row);
      return presentAccount(row);
    } catch (err) {
      if (isUniqueViolation(err)) throw new AppError('conflict', `Account ${address} already exists`);
      throw err;
    }
  }

  async list(filter: { domain?: string; q?: string }, page: Page, sort?: string): Promise<Paged<AccountView>> {
    const order = sortOf(sort, ACCOUNT_SORT);
    const q = filter.q?.trim().toLowerCase();
    if (q !== undefined && !/^[a-z0-9.@_+=-]{0,254}$/.test(q)) {
      const message = 'letters, digits and . @ _ + = - only (part of an address)';
      throw queryError('q', message);
    }
    const domainId = filter.domain === undefined ? undefined : (await this.domains.resolve(filter.domain)).id;
    const { rows, total } = await this.repo.list({ ...(domainId === undefined ? {} : { domainId }), ...(q ? { contains: q } : {}) }, page, order);
    return { items: rows.map(presentAccount), total, ...page };
  }

  /** By id (a number) or by address. */
  async resolve(idOrAddress: string | number): Promise<AccountRow> {
    const row =
      typeof idOrAddress === 'number' || /^\d+$/.test(idOrAddress)
        ? await this.repo.findById(Number(idOrAddress))
        : await this.repo.findByAddress(normalizeAddress(idOrAddress).address);
    if (!row) throw new AppError('not_found', `Account ${String(idOrAddress)} not found`);
    return row;
  }

  async get(idOrAddress: string | number): Promise<AccountView> {
    return presentAccount(await this.resolve(idOrAddress));
  }

  async update(idOrAddress: string | number, patch: AccountPatch, opts: Pick<PasswordOptions, 'keepSession'> = {}): Promise<AccountView> {
    const row = await this.resolve(idOrAddress);
    checkRanges(patch);
    if (patch.revoke_app_passwords === true && patch.password === undefined) {
      throw badRequest('revoke_app_passwords goes with a new password: give password too (or revoke app passwords one by one)');
    }
    const changes: AccountChanges = { updated_at: this.clock.now() };
    if (patch.display_name !== undefined) changes.display_name = patch.display_name;
    if (patch.quota_bytes !== undefined) changes.quota_bytes = patch.quota_bytes;
    if (patch.active !== undefined) changes.active = patch.active ? 1 : 0;
    if (patch.require_app_password !== undefined) changes.require_app_password = patch.require_app_password ? 1 : 0;
    for (const f of SEND_RATE_FIELDS) if (patch[f] !== undefined) changes[f] = patch[f];
    if (patch.password !== undefined) changes.password_hash = await hashMailPassword(patch.password);
    if (patch.password === undefined) await this.repo.update(row.id, changes);
    else {
      // Its listeners are built before the transaction (SQLite has one connection), then change their rows inside it.
      const change = await beginDeletion(this.passwordChanged, { id: row.id, address: row.address, revokeAppPasswords: patch.revoke_app_passwords === true, keepSession: opts.keepSession });
      await this.repo.update(row.id, changes, (tx) => change.within(tx));
    }
    const after = await this.resolve(row.id);
    await this.limits.accountChanged(after);
    // A new password or a deactivation must bite at once: end the open sessions.
    if (patch.password !== undefined || (row.active === 1 && after.active === 0)) await this.kick(after.address);
    return presentAccount(after);
  }

  /** Ends the account's IMAP/POP and portal sessions (but `keepSession`), and with `revokeAppPasswords` its app passwords. */
  setPassword(idOrAddress: string | number, password: string, opts: PasswordOptions = {}): Promise<AccountView> {
    return this.update(idOrAddress, { password, ...(opts.revokeAppPasswords === undefined ? {} : { revoke_app_passwords: opts.revokeAppPasswords }) }, { keepSession: opts.keepSession });
  }

  async delete(idOrAddress: string | number): Promise<void> {
    const row = await this.resolve(idOrAddress);
    const deletion = await beginDeletion(this.deleting, { id: row.id, address: row.address });
    // Under the routing lock: without its mailbox the address may fall to a catch-all that leads back to it.
    const deleted = await this.routing.change(async (tx, routes) => {
      const gone = await this.repo.delete(row.id, (t) => deletion.within(t), tx);
      if (gone) await routes.refuseLoopWithout(row.address);
      return gone;
    });
    if (!deleted) throw new AppError('not_found', `Account ${row.address} not found`);
    await this.limits.accountRemoved(row.address);
    await this.kick(row.address);
  }

  async kick(address: string): Promise<void> {
    const r = await this.kicker.kick(address);
    if (r.failed) this.log.warn({ account: address }, `open IMAP/POP sessions were not ended: ${r.detail}`);
    else this.log.info({ account: address, kicked: r.kicked }, `doveadm kick: ${r.detail}`);
  }
}
