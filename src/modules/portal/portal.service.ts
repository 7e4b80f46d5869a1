import type { Logger } from 'pino';
import { AppError, badRequest } from '../../shared/errors.js';
import type { Clock } from '../../shared/clock.js';
import type { AuthLog } from '../../shared/auth-log.js';
import { loginKey, normalizeAddress } from '../../shared/mail-names.js';
import { hashPassword } from '../../shared/password-hash.js';
import { randomId } from '../../shared/crypto.js';
import { SieveRulesError, checkSieveRules } from '../../shared/sieve-rules.js';
import type { SieveRules } from '../../shared/sieve-rules.js';
import type { MailboxHost, MailboxUsage } from '../../adapters/dovecot/mailbox-host.js';
import { verifyMailPassword } from '../accounts/index.js';
import type { AccountLookup, AccountRow, AccountService } from '../accounts/index.js';
import type { AppPasswordCreated, AppPasswordService, AppPasswordView } from '../app-passwords/index.js';
import type { AuditService } from '../audit/index.js';
import type { Attempt } from '../auth/index.js';
import type { PortalRepository } from './portal.repository.js';
import type { PortalSession, PortalSessions } from './portal-session.js';
import type { PortalTotp } from './portal-totp.js';
import { InSessionChecks, reserveAll } from './portal-lockouts.js';
import type { PortalLockouts } from './portal-lockouts.js';
import type { ForwardingView, VacationView } from './schema.js';

/** The device profile: the autoconfiguration module's Apple profile (`renderMobileconfig`), with the same ports and TLS modes its answers name. */
export type DeviceProfileRenderer = (input: { address: string; appPassword?: string }) => string | Promise<string>;

export type PortalDeps = {
  repo: PortalRepository;
  sessions: PortalSessions;
  totp: PortalTotp;
  accounts: AccountLookup;
  passwords: Pick<AccountService, 'setPassword'>;
  appPasswords: Pick<AppPasswordService, 'create' | 'list' | 'revoke'>;
  audit: Pick<AuditService, 'record'>;
  mailbox: MailboxHost;
  /** Failures per client address, per mailbox (its canonical address) and per session, apart from the admin API's. */
  lockouts: PortalLockouts;
  authLog: AuthLog;
  clock: Clock;
  log: Logger;
  profiles?: DeviceProfileRenderer | undefined;
};

/** Who asked: the session's mailbox and the client address (for the audit log). */
export type Caller = { session: PortalSession; ip: string };

/** One answer for every refused sign-in: it never tells which part was wrong or whether the mailbox exists. */
const REFUSED = 'Wrong address or password (or code)';
const DISABLED = 'Self-service is switched off for this mailbox: ask your administrator';
const WRONG_CODE = 'That code is not valid: enter the 6 digits your app shows now';
const NO_RULES: SieveRules = { forward: null, vacation: null };

/**
 * The mailbox self-service portal. Every operation takes the session, and
 * acts on the session's own account only: no route names a mailbox.
 */
export class PortalService {
  private readonly inSession: InSessionChecks;

  constructor(private readonly d: PortalDeps) {
    this.inSession = new InSessionChecks(d);
  }

  /** Sign-in with the mailbox password (never an app password), and the mailbox's TOTP code when it has one. */
  async signIn(input: { address: string; password: string; code?: string | undefined }, ip: string): Promise<{ cookie: string; session: PortalSession; address: string }> {
    // Every spelling that signs in to a mailbox counts under its one canonical address.
    const given = loginKey(input.address);
    const [ipAttempt, addrAttempt] = (await reserveAll([
      [this.d.lockouts.ip, ip],
      [this.d.lockouts.address, given],
    ])) as [Attempt, Attempt];
    let account: AccountRow | undefined;
    try {
      account = await this.check(given, input.password, input.code);
    } catch (err) {
      await Promise.all([ipAttempt.passed(), addrAttempt.passed()]);
      throw err;
    }
    if (!account) {
      this.d.authLog.failure(given, ip, 'mailsvc-portal');
      await Promise.all([ipAttempt.failed(), addrAttempt.failed()]);
      throw new AppError('unauthenticated', REFUSED);
    }
    await Promise.all([ipAttempt.passed(), addrAttempt.signedIn()]);
    if (await this.disabledFor(account)) throw new AppError('forbidden', DISABLED);
    const started = await this.d.sessions.start(account.id);
    await this.audit(account.address, ip, 'portal: sign in', {});
    return { ...started, address: account.address };
  }

  /** The account when address, password and code are right; undefined otherwise (same time spent on an unknown address). */
  private async check(address: string, password: string, code: string | undefined): Promise<AccountRow | undefined> {
    let normalized: string | undefined;
    try {
      normalized = normalizeAddress(address).address;
    } catch {
      normalized = undefined;
    }
    const account = normalized === undefined ? undefined : await this.d.accounts.findForLogin(normalized);
    // The mailbox password's own hash only: an app password, or the administrator's password, is never it.
    const ok = await verifyMailPassword(account?.password_hash ?? (await dummy()), password);
    if (!ok || !account || account.active !== 1 || account.domain_active !== 1) return undefined;
    if (!(await this.d.totp.passes(account.id, code))) return undefined;
    return account;
  }

  private async disabledFor(account: Pick<AccountRow, 'address'>): Promise<boolean> {
    return this.d.repo.isDisabled(account.address, account.address.slice(account.address.lastIndexOf('@') + 1));
  }

  /** The session's account; ends the session when the account is gone, inactive or self-service was switched off. */
  async account(session: PortalSession): Promise<AccountRow> {
    const acc = await this.d.accounts.resolve(session.accountId).catch(() => undefined);
    const login = acc ? await this.d.accounts.findForLogin(acc.address) : undefined;
    if (!acc || !login || login.active !== 1 || login.domain_active !== 1) {
      await this.d.sessions.end(session);
      throw new AppError('unauthenticated', 'Your session has ended: sign in again');
    }
    if (await this.disabledFor(acc)) {
      await this.d.sessions.end(session);
      throw new AppError('forbidden', DISABLED);
    }
    return acc;
  }

  async signOut(c: Caller): Promise<void> {
    const acc = await this.d.accounts.resolve(c.session.accountId).catch(() => undefined);
    await this.d.sessions.end(c.session);
    if (acc) await this.audit(acc.address, c.ip, 'portal: sign out', {});
  }

  async overview(c: Caller): Promise<{ address: string; display_name: string; quota_bytes: number; totp_enabled: boolean; require_app_password: boolean; profiles: boolean }> {
    const acc = await this.account(c.session);
    return {
      address: acc.address,
      display_name: acc.display_name,
      quota_bytes: acc.quota_bytes,
      totp_enabled: await this.d.totp.enabled(acc.id),
      require_app_password: acc.require_app_password === 1,
      profiles: this.d.profiles !== undefined,
    };
  }

  async usage(c: Caller): Promise<MailboxUsage> {
    const acc = await this.account(c.session);
    return this.d.mailbox.usage(acc.address);
  }

  /** Checked by the accounts module's policy and hashed as Dovecot reads it (setPassword); the mailbox's IMAP/POP sessions are kicked, its other portal sessions end. */
  async changePassword(c: Caller, input: { current_password: string; new_password: string }): Promise<void> {
    const acc = await this.account(c.session);
    // A guess like a sign-in: counted, logged, and the session ends after a few (InSessionChecks).
    if (!(await this.inSession.run(c.session, acc.address, c.ip, () => verifyMailPassword(acc.password_hash, input.current_password)))) {
      throw new AppError('forbidden', 'The current password is wrong');
    }
    if (input.new_password === input.current_password) throw badRequest('The new password must differ from the current one');
    // Ends the mailbox's other portal sessions in the same transaction (account.password-changed).
    await this.d.passwords.setPassword(acc.id, input.new_password, { keepSession: c.session.idHash });
    await this.audit(acc.address, c.ip, 'portal: change password', { password: '[redacted]' });
  }

  async listAppPasswords(c: Caller): Promise<AppPasswordView[]> {
    return this.d.appPasswords.list((await this.account(c.session)).id);
  }

  async createAppPassword(c: Caller, input: { name: string; expires_at?: string | undefined }): Promise<AppPasswordCreated> {
    const acc = await this.account(c.session);
    const created = await this.d.appPasswords.create(acc.id, input);
    await this.audit(acc.address, c.ip, 'portal: create app password', { id: created.id, name: created.name, expires_at: created.expires_at });
    return created;
  }

  async revokeAppPassword(c: Caller, id: string): Promise<void> {
    const acc = await this.account(c.session);
    // revoke looks the id up WITH the account: another mailbox's id is simply not found.
    await this.d.appPasswords.revoke(acc.id, id);
    await this.audit(acc.address, c.ip, 'portal: revoke app password', { id });
  }

  /** A configuration profile for a device, with a fresh app password inside when asked. */
  async deviceProfile(c: Caller, input: { app_password_name?: string | undefined }): Promise<{ file: string; filename: string }> {
    const acc = await this.account(c.session);
    if (!this.d.profiles) throw new AppError('not_found', 'Device profiles are not available on this server');
    let appPassword: string | undefined;
    if (input.app_password_name !== undefined) {
      const created = await this.d.appPasswords.create(acc.id, { name: input.app_password_name });
      appPassword = created.password;
      await this.audit(acc.address, c.ip, 'portal: create app password', { id: created.id, name: created.name, expires_at: null, profile: true });
    }
    const file = await this.d.profiles({ address: acc.address, ...(appPassword === undefined ? {} : { appPassword }) });
    return { file, filename: `${acc.address.replace(/[^a-z0-9.@_-]/g, '_')}.mobileconfig` };
  }

  private async rules(accountId: number): Promise<SieveRules> {
    const raw = await this.d.repo.findRules(accountId);
    return raw === undefined ? NO_RULES : (JSON.parse(raw) as SieveRules);
  }

  async forwarding(c: Caller): Promise<ForwardingView> {
    const f = (await this.rules((await this.account(c.session)).id)).forward;
    return { to: f?.to ?? null, keep_copy: f?.keepCopy ?? true };
  }

  async vacation(c: Caller): Promise<VacationView> {
    const v = (await this.rules((await this.account(c.session)).id)).vacation;
    return v ? { enabled: true, subject: v.subject, body: v.body, start: v.start, end: v.end, days: v.days } : { enabled: false, subject: '', body: '', start: null, end: null, days: 7 };
  }

  async setForwarding(c: Caller, input: ForwardingView): Promise<ForwardingView> {
    const acc = await this.account(c.session);
    const rules = await this.rules(acc.id);
    await this.store(acc, { ...rules, forward: input.to === null ? null : { to: input.to, keepCopy: input.keep_copy } });
    await this.audit(acc.address, c.ip, 'portal: set forwarding', { to: input.to, keep_copy: input.keep_copy });
    return this.forwarding(c);
  }

  async setVacation(c: Caller, input: VacationView): Promise<VacationView> {
    const acc = await this.account(c.session);
    const rules = await this.rules(acc.id);
    const vacation = input.enabled ? { subject: input.subject, body: input.body, start: input.start, end: input.end, days: input.days } : null;
    await this.store(acc, { ...rules, vacation });
    await this.audit(acc.address, c.ip, 'portal: set out-of-office reply', { enabled: input.enabled, start: input.start, end: input.end, days: input.days });
    return this.vacation(c);
  }

  /** Checked, written to Dovecot first (a script it refuses is never stored), then kept. */
  private async store(acc: AccountRow, given: SieveRules): Promise<void> {
    let rules: SieveRules;
    try {
      rules = checkSieveRules(given, acc.address);
    } catch (err) {
      if (err instanceof SieveRulesError) throw badRequest(`${err.message[0]?.toUpperCase() ?? ''}${err.message.slice(1)}`);
      throw err;
    }
    await this.d.mailbox.putSieve(acc.address, rules);
    await this.d.repo.putRules(acc.id, JSON.stringify(rules), this.d.clock.now());
  }

  async startTotp(c: Caller): Promise<{ secret: string; uri: string }> {
    const acc = await this.account(c.session);
    return this.d.totp.start(acc.id, acc.address);
  }

  async confirmTotp(c: Caller, code: string): Promise<void> {
    const acc = await this.account(c.session);
    if (!(await this.inSession.run(c.session, acc.address, c.ip, () => this.d.totp.confirm(acc.id, code)))) throw badRequest(WRONG_CODE);
    await this.audit(acc.address, c.ip, 'portal: enable TOTP', {});
  }

  async disableTotp(c: Caller, code: string): Promise<void> {
    const acc = await this.account(c.session);
    if (!(await this.inSession.run(c.session, acc.address, c.ip, () => this.d.totp.disable(acc.id, code)))) throw badRequest(WRONG_CODE);
    await this.audit(acc.address, c.ip, 'portal: disable TOTP', {});
  }

  private async audit(actor: string, ip: string, action: string, summary: Record<string, string | number | boolean | null>): Promise<void> {
    await this.d.audit.record({ actor, tokenId: null, source: ip, action, target: actor, summary, result: 'ok' });
  }
}

/** Verified against when the address is unknown, so an unknown address costs the same time as a known one (made once, of a random password). */
let dummyHash: Promise<string> | undefined;
const dummy = (): Promise<string> => (dummyHash ??= hashPassword(randomId(16)).then((h) => `{ARGON2ID}${h}`));
