import type { CountryCode } from 'libphonenumber-js';
import type { SecretBox } from '../../shared/secret-box.js';
import type { Clock } from '../../shared/clock.js';
import { AppError, badRequest } from '../../shared/errors.js';
import { sealContext } from '../../db/sealed-columns.js';
import type { Factor } from './schema.js';
import type { RecoveryCodeService } from './recovery-code.service.js';
import { DEFAULT_PROVIDER, PROVIDER_CODES, isProviderCode } from '../sms/index.js';
import type { ProviderCode, ProviderCredentials } from '../sms/index.js';
import type { AdminMfaRow, MfaRepository } from './mfa.repository.js';
import { matchTotpStep, newTotpSecret, provisioningUri } from './totp.js';
import type { Static } from '@sinclair/typebox';
import type { MfaStatus as MfaStatusSchema, SmsConfigBody, TotpConfirmed as TotpConfirmedSchema, TotpEnrollment as TotpEnrollmentSchema } from './schema.js';

/** The answers and bodies are the schemas' types (one source for both). */
export type MfaStatus = Static<typeof MfaStatusSchema>;
/** The confirm answer: the status, and the recovery codes (once) when TOTP was just enabled. */
export type TotpConfirmed = Static<typeof TotpConfirmedSchema>;
export type TotpEnrollment = Static<typeof TotpEnrollmentSchema>;
export type SmsConfigUpdate = Static<typeof SmsConfigBody>;

const TOTP_CTX = sealContext('admin_mfa', 1, 'totp_secret');

export class MfaService {
  constructor(
    private readonly repo: MfaRepository,
    private readonly providers: ProviderCredentials,
    private readonly box: SecretBox,
    private readonly clock: Clock,
    private readonly opts: {
      issuer: string;
      mfaRequired: boolean;
      smsDefaultRegion: CountryCode | undefined;
      recovery: RecoveryCodeService;
      /** How many passkeys are registered (a passkey is the factor `webauthn`). */
      passkeys: { count(): Promise<number>; removeAll(): Promise<void> };
      /** A factor was just enrolled (TOTP confirmed, SMS enabled): the tokens issued without one are revoked. */
      onFactorEnrolled?: () => Promise<unknown>;
    },
  ) {}

  smsProviderOf(row: AdminMfaRow): ProviderCode {
    return row.sms_provider !== null && isProviderCode(row.sms_provider) ? row.sms_provider : DEFAULT_PROVIDER;
  }

  /** The usable second factors: "a second factor is enrolled" means this is not empty. */
  async methodsOf(row: AdminMfaRow): Promise<Factor[]> {
    const methods: Factor[] = [];
    if (row.totp_enabled === 1 && row.totp_secret !== null) methods.push('totp');
    if (row.sms_enabled === 1 && row.sms_phone !== null && (await this.providers.hasCredentials(this.smsProviderOf(row)))) {
      methods.push('sms');
    }
    if ((await this.opts.passkeys.count()) > 0) methods.push('webauthn');
    return methods;
  }

  record(): Promise<AdminMfaRow> {
    return this.repo.get();
  }

  async enrolledMethods(): Promise<Factor[]> {
    return this.methodsOf(await this.repo.get());
  }

  private async statusOf(row: AdminMfaRow): Promise<MfaStatus> {
    return {
      totp_enabled: row.totp_enabled === 1,
      totp_pending: row.totp_enabled === 0 && row.totp_secret !== null,
      totp_confirmed_at: row.totp_confirmed_at === null ? null : new Date(row.totp_confirmed_at).toISOString(),
      sms_enabled: row.sms_enabled === 1,
      sms_phone: row.sms_phone,
      sms_provider: row.sms_provider,
      methods: await this.methodsOf(row),
      mfa_required: this.opts.mfaRequired,
      recovery_codes_remaining: await this.opts.recovery.remaining(),
      passkeys: await this.opts.passkeys.count(),
    };
  }

  async status(): Promise<MfaStatus> {
    return this.statusOf(await this.repo.get());
  }

  async enrollTotp(username: string): Promise<TotpEnrollment> {
    return this.repo.transaction(async (tx) => {
      const row = await this.repo.get(tx);
      if (row.totp_enabled === 1) {
        throw new AppError('conflict', 'TOTP is already enabled: disable it with DELETE /auth/mfa/totp before enrolling again');
      }
      const secret = newTotpSecret();
      await this.repo.update(
        { totp_secret: this.box.seal(secret, TOTP_CTX), totp_enabled: 0, totp_confirmed_at: null, totp_last_step: null },
        this.clock.now(),
        tx,
      );
      return { secret, provisioning_uri: provisioningUri(secret, username, this.opts.issuer), issuer: this.opts.issuer };
    });
  }

  async confirmTotp(code: string): Promise<TotpConfirmed> {
    const row = await this.repo.get();
    if (row.totp_secret === null) throw badRequest('TOTP enrollment not started: call POST /auth/mfa/totp/enroll first');
    const now = this.clock.now();
    const step = matchTotpStep(this.box.open(row.totp_secret, TOTP_CTX), code, now);
    if (step === null) throw badRequest('Invalid code');
    if (row.totp_enabled === 0) {
      if (!(await this.repo.confirmPending(row.totp_secret, step, now))) {
        throw badRequest('TOTP enrollment changed while confirming: scan the new secret and confirm again');
      }
      await this.opts.onFactorEnrolled?.();
      const codes = await this.opts.recovery.regenerate();
      return { ...(await this.status()), recovery_codes: codes };
    } else if (!(await this.repo.acceptTotpStep(step, now))) {
      throw badRequest('Invalid code');
    }
    return this.status();
  }

  async deleteTotp(): Promise<MfaStatus> {
    await this.repo.update({ totp_enabled: 0, totp_secret: null, totp_confirmed_at: null, totp_last_step: null }, this.clock.now());
    await this.opts.recovery.erase();
    return this.status();
  }

  /** A new set of recovery codes (the old set stops working); only while TOTP is enabled. */
  async regenerateRecoveryCodes(): Promise<{ recovery_codes: string[]; recovery_codes_remaining: number }> {
    const row = await this.repo.get();
    if (row.totp_enabled !== 1) throw badRequest('Recovery codes belong to TOTP: enable TOTP first (POST /auth/mfa/totp/enroll, then confirm)');
    const codes = await this.opts.recovery.regenerate();
    return { recovery_codes: codes, recovery_codes_remaining: codes.length };
  }

  /** Unused recovery codes left; none without TOTP. */
  async recoveryCodesRemaining(): Promise<number> {
    const row = await this.repo.get();
    return row.totp_enabled === 1 ? this.opts.recovery.remaining() : 0;
  }

  /** Uses up a recovery code for sign-in; only while TOTP is enabled. */
  async useRecoveryCode(code: string, ip: string): Promise<boolean> {
    const row = await this.repo.get();
    return row.totp_enabled === 1 && this.opts.recovery.use(code, ip);
  }

  /** Checks a TOTP code for sign-in; a time step is accepted once only. */
  async verifyTotp(code: string): Promise<boolean> {
    const row = await this.repo.get();
    if (row.totp_enabled !== 1 || row.totp_secret === null) return false;
    const now = this.clock.now();
    const step = matchTotpStep(this.box.open(row.totp_secret, TOTP_CTX), code, now);
    return step !== null && this.repo.acceptTotpStep(step, now);
  }

  /** libphonenumber-js and its metadata are loaded by the first phone number, not at every start. */
  async normalizePhone(phone: string): Promise<string> {
    const { parsePhoneNumberFromString } = await import('libphonenumber-js');
    const parsed = parsePhoneNumberFromString(phone, this.opts.smsDefaultRegion);
    if (!parsed || !parsed.isValid()) throw badRequest('Invalid phone number');
    return parsed.number;
  }

  /** Applies phone, provider, enabled in that order; any 400 commits nothing. */
  async patchSms(body: SmsConfigUpdate): Promise<MfaStatus> {
    // Looked up before the transaction: SQLite has one connection, held by the transaction.
    const configured = new Map<ProviderCode, boolean>();
    if (body.enabled === true) {
      for (const code of PROVIDER_CODES) configured.set(code, await this.providers.hasCredentials(code));
    }
    // Read before the transaction, which then holds the database only for its own work.
    const normalized = body.phone !== undefined && body.phone !== '' ? await this.normalizePhone(body.phone) : null;
    await this.repo.transaction(async (tx) => {
      const row = await this.repo.get(tx);
      const next: Partial<AdminMfaRow> = {};
      let phone = row.sms_phone;
      let provider = row.sms_provider;
      if (body.phone !== undefined) {
        if (body.phone === '') {
          phone = null;
          next.sms_phone = null;
          next.sms_enabled = 0;
        } else {
          phone = normalized;
          next.sms_phone = phone;
        }
      }
      if (body.provider !== undefined) {
        if (!isProviderCode(body.provider)) throw badRequest('Unknown provider');
        provider = body.provider;
        next.sms_provider = provider;
      }
      if (body.enabled === true) {
        if (phone === null) throw badRequest('Cannot enable SMS: no phone stored; set phone first');
        const code = provider !== null && isProviderCode(provider) ? provider : DEFAULT_PROVIDER;
        if (configured.get(code) !== true) {
          throw badRequest(`Cannot enable SMS: provider ${code} has no credentials; set client_secret or api_key with PUT /auth/mfa/providers`);
        }
        next.sms_enabled = 1;
      } else if (body.enabled === false) {
        next.sms_enabled = 0;
      }
      if (Object.keys(next).length > 0) await this.repo.update(next, this.clock.now(), tx);
    });
    if (body.enabled === true) await this.opts.onFactorEnrolled?.();
    return this.status();
  }

  /** For `admin mfa reset` on the host: every factor off, TOTP secret and passkeys erased, the passkey policy back to its default. */
  async resetAll(): Promise<MfaStatus> {
    await this.repo.update({ totp_enabled: 0, totp_secret: null, totp_confirmed_at: null, totp_last_step: null, sms_enabled: 0, passkey_required: null, passkey_passwordless: null }, this.clock.now());
    await this.opts.recovery.erase();
    await this.opts.passkeys.removeAll();
    return this.status();
  }
}
