import { Secret, TOTP } from 'otpauth';
import { AppError } from '../../shared/errors.js';
import type { Clock } from '../../shared/clock.js';
import { sealContext } from '../../db/sealed-columns.js';
import type { SecretBox } from '../../shared/secret-box.js';
import type { PortalRepository } from './portal.repository.js';

/** RFC 6238, SHA-1, 6 digits, 30 s steps: what every authenticator app reads. */
const PERIOD = 30;
/** Bound to the row: a sealed secret copied to another mailbox's row does not open there. */
const sealedAt = (accountId: number): string => sealContext('portal_totp', accountId, 'secret_sealed');

const totp = (secret: string, label: string, issuer: string) =>
  new TOTP({ issuer, label, algorithm: 'SHA1', digits: 6, period: PERIOD, secret: Secret.fromBase32(secret) });

/**
 * A mailbox's own second factor in the portal (never the administrator's):
 * the secret sealed at rest, enrolment confirmed by a first code, and each
 * time step accepted once (a code seen on the wire cannot be replayed).
 */
export class PortalTotp {
  constructor(
    private readonly repo: PortalRepository,
    private readonly box: Pick<SecretBox, 'seal' | 'open'>,
    private readonly clock: Clock,
    private readonly issuer: string,
  ) {}

  async enabled(accountId: number): Promise<boolean> {
    return (await this.repo.findTotp(accountId))?.confirmed === 1;
  }

  /** The step of a valid code (one step of drift either way), or null. */
  private step(secret: string, code: string): number | null {
    if (!/^\d{6}$/.test(code)) return null;
    const now = this.clock.now();
    const delta = totp(secret, 'x', 'x').validate({ token: code, timestamp: now, window: 1 });
    return delta === null ? null : Math.floor(now / 1000 / PERIOD) + delta;
  }

  /** At sign-in: true when the mailbox has no confirmed TOTP, or the code is valid and its step unused. */
  async passes(accountId: number, code: string | undefined): Promise<boolean> {
    const row = await this.repo.findTotp(accountId);
    if (row?.confirmed !== 1) return true;
    const step = code === undefined ? null : this.step(this.box.open(row.secret_sealed, sealedAt(accountId)), code);
    return step !== null && (await this.repo.useTotpStep(accountId, step, false));
  }

  async start(accountId: number, address: string): Promise<{ secret: string; uri: string }> {
    if (await this.enabled(accountId)) throw new AppError('conflict', 'TOTP is already on: switch it off first to enrol a new authenticator');
    const secret = new Secret({ size: 20 }).base32;
    await this.repo.putTotp({ account_id: accountId, secret_sealed: this.box.seal(secret, sealedAt(accountId)), confirmed: 0, last_step: 0, created_at: this.clock.now() });
    return { secret, uri: totp(secret, address, this.issuer).toString() };
  }

  /** Throws when no enrolment waits; false for a wrong code (the caller counts it). */
  async confirm(accountId: number, code: string): Promise<boolean> {
    const row = await this.repo.findTotp(accountId);
    if (!row || row.confirmed === 1) throw new AppError('conflict', 'No TOTP enrolment is waiting: start one first');
    const step = this.step(this.box.open(row.secret_sealed, sealedAt(accountId)), code);
    return step !== null && (await this.repo.useTotpStep(accountId, step, true));
  }

  /** Throws when TOTP is not on; false for a wrong code (the caller counts it). */
  async disable(accountId: number, code: string): Promise<boolean> {
    const row = await this.repo.findTotp(accountId);
    if (row?.confirmed !== 1) throw new AppError('conflict', 'TOTP is not on');
    const step = this.step(this.box.open(row.secret_sealed, sealedAt(accountId)), code);
    if (step === null || !(await this.repo.useTotpStep(accountId, step, false))) return false;
    await this.repo.removeTotp(accountId);
    return true;
  }
}
