import type { AuthenticationResponseJSON, PublicKeyCredentialCreationOptionsJSON, PublicKeyCredentialRequestOptionsJSON, RegistrationResponseJSON } from '@simplewebauthn/server';
import type { Static } from '@sinclair/typebox';
import type { Clock } from '../../shared/clock.js';
import { AppError, badRequest } from '../../shared/errors.js';
import { randomId } from '../../shared/crypto.js';
import type { PasskeyRequirement, WebauthnSettings } from '../../config/webauthn-settings.js';
import { PASSKEY_REQUIREMENTS } from '../../config/webauthn-settings.js';
import type { MfaRepository } from './mfa.repository.js';
import { PasskeyRepository } from './passkey.repository.js';
import type { PasskeyRow } from './passkey.repository.js';
import type { Passkey as PasskeySchema, PasskeyPolicy as PolicySchema, PasskeyPolicyPatch } from './passkey.schema.js';

/**
 * @simplewebauthn/server (with @peculiar/x509 and its ASN.1 stack, about half a
 * megabyte of code), loaded by the first passkey ceremony, not at every start.
 */
let webauthn: Promise<typeof import('@simplewebauthn/server')> | undefined;
const simpleWebAuthn = (): Promise<typeof import('@simplewebauthn/server')> => (webauthn ??= import('@simplewebauthn/server'));

export type PasskeyView = Static<typeof PasskeySchema>;
export type PasskeyPolicyView = Static<typeof PolicySchema>;
export type PasskeyPolicyChange = Static<typeof PasskeyPolicyPatch>;

/**
 * Where a passkey registration's challenge waits for the answer: single use,
 * short-lived, bound to who asked (auth keeps it beside the sign-in challenges).
 */
export type RegistrationCeremonies = {
  start(owner: string, challenge: string, ttlSeconds: number): Promise<string>;
  take(id: string, owner: string): Promise<string | null>;
};

/** What an assertion came to: a use, nothing usable, or a counter that went backwards (a possible clone). */
export type AssertionResult = { ok: true; passkey: PasskeyRow } | { ok: false; clone?: { passkey: PasskeyRow; stored: number; presented: number } };

const NOT_CONFIGURED = 'Passkeys need the panel\'s origin: set MAILSVC_PANEL_ORIGIN (for example https://mail.example.org) and restart';
const KNOWN_TRANSPORTS = new Set(['ble', 'cable', 'hybrid', 'internal', 'nfc', 'smart-card', 'usb']);

function view(row: PasskeyRow): PasskeyView {
  return {
    id: row.id,
    name: row.name,
    created_at: new Date(Number(row.created_at)).toISOString(),
    last_used_at: row.last_used_at === null ? null : new Date(Number(row.last_used_at)).toISOString(),
    transports: row.transports === '' ? [] : row.transports.split(','),
    backed_up: row.backed_up === 1,
    device_type: row.device_type === 'multiDevice' ? 'multi_device' : 'single_device',
  };
}

/**
 * The administrator's passkeys: WebAuthn registration and assertion checks
 * (@simplewebauthn/server), with the origin and RP ID from the settings only.
 * Where a ceremony's challenge is kept (single use, short life) is the
 * caller's business: this service makes options and checks answers.
 */
export class PasskeyService {
  constructor(
    private readonly repo: PasskeyRepository,
    private readonly mfa: MfaRepository,
    private readonly clock: Clock,
    private readonly settings: WebauthnSettings,
    private readonly username: string,
  ) {}

  get configured(): boolean {
    return this.settings.origin !== undefined && this.settings.rpId !== undefined;
  }

  private rp(): { origin: string; rpId: string } {
    const { origin, rpId } = this.settings;
    if (origin === undefined || rpId === undefined) throw badRequest(NOT_CONFIGURED);
    return { origin, rpId };
  }

  /** Seconds a ceremony's challenge lives. */
  get timeoutSeconds(): number {
    return this.settings.timeoutSeconds;
  }

  async list(): Promise<PasskeyView[]> {
    return (await this.repo.all()).map(view);
  }

  count(): Promise<number> {
    return this.repo.howMany();
  }

  /** The WebAuthn user handle of the administrator, made once. */
  private async userHandle(): Promise<string> {
    const row = await this.mfa.get();
    if (row.webauthn_user_id !== null) return row.webauthn_user_id;
    const handle = randomId(32);
    await this.mfa.update({ webauthn_user_id: handle }, this.clock.now());
    return handle;
  }

  async registrationOptions(): Promise<PublicKeyCredentialCreationOptionsJSON> {
    const { rpId } = this.rp();
    const existing = await this.repo.all();
    return (await simpleWebAuthn()).generateRegistrationOptions({
      rpName: this.settings.rpName,
      rpID: rpId,
      userName: this.username,
      userID: Buffer.from(await this.userHandle(), 'base64url'),
      timeout: this.settings.timeoutSeconds * 1000,
      // No attestation statement is asked for: which make of authenticator it is does not decide anything here.
      attestationType: 'none',
      excludeCredentials: existing.map((p) => ({ id: p.credential_id, transports: p.transports === '' ? [] : p.transports.split(',') })),
      // A discoverable credential when the authenticator can make one: passwordless sign-in needs it.
      authenticatorSelection: { residentKey: 'preferred', userVerification: this.settings.userVerification },
    });
  }

  async register(name: string, response: RegistrationResponseJSON, expectedChallenge: string): Promise<PasskeyView> {
    const { origin, rpId } = this.rp();
    const trimmed = name.trim();
    if (trimmed === '') throw new AppError('validation', 'name must not be empty', { errors: [{ path: 'body.name', message: 'must not be empty' }] });
    let info;
    try {
      const r = await (await simpleWebAuthn()).verifyRegistrationResponse({
        response,
        expectedChallenge,
        expectedOrigin: origin,
        expectedRPID: rpId,
        requireUserVerification: this.settings.userVerification === 'required',
      });
      if (!r.verified) throw new Error('not verified');
      info = r.registrationInfo;
    } catch (err) {
      throw badRequest(`The passkey was not accepted: ${(err as Error).message}`);
    }
    const credentialId = info.credential.id;
    const row: PasskeyRow = {
      id: randomId(12),
      credential_hash: PasskeyRepository.hashOf(credentialId),
      credential_id: credentialId,
      public_key: Buffer.from(info.credential.publicKey).toString('base64url'),
      counter: info.credential.counter,
      transports: (info.credential.transports ?? response.response.transports ?? []).filter((t) => KNOWN_TRANSPORTS.has(t)).join(','),
      backed_up: info.credentialBackedUp ? 1 : 0,
      device_type: info.credentialDeviceType,
      aaguid: info.aaguid,
      name: trimmed,
      created_at: this.clock.now(),
      last_used_at: null,
    };
    if (!(await this.repo.insert(row))) throw new AppError('conflict', 'This passkey is registered already');
    return view(row);
  }

  async rename(id: string, name: string): Promise<PasskeyView> {
    const trimmed = name.trim();
    if (trimmed === '') throw new AppError('validation', 'name must not be empty', { errors: [{ path: 'body.name', message: 'must not be empty' }] });
    if (!(await this.repo.rename(id, trimmed))) throw new AppError('not_found', 'No such passkey');
    const row = await this.repo.byId(id);
    if (!row) throw new AppError('not_found', 'No such passkey');
    return view(row);
  }

  async remove(id: string): Promise<void> {
    if ((await this.repo.byId(id)) === undefined) throw new AppError('not_found', 'No such passkey');
    if ((await this.repo.howMany()) === 1 && (await this.policy()).required !== 'no') {
      throw badRequest('This is the last passkey and the policy requires one: set the passkey policy to "no" first (PATCH /auth/mfa/passkeys/policy)');
    }
    if (!(await this.repo.remove(id))) throw new AppError('not_found', 'No such passkey');
  }

  async removeAll(): Promise<void> {
    await this.repo.removeAll();
  }

  /** Options for an assertion: the registered passkeys (second factor), or any discoverable one of this site (passwordless). */
  async authenticationOptions(passwordless: boolean): Promise<PublicKeyCredentialRequestOptionsJSON> {
    const { rpId } = this.rp();
    const keys = passwordless ? [] : await this.repo.all();
    return (await simpleWebAuthn()).generateAuthenticationOptions({
      rpID: rpId,
      timeout: this.settings.timeoutSeconds * 1000,
      userVerification: passwordless ? 'required' : this.settings.userVerification,
      allowCredentials: keys.map((p) => ({ id: p.credential_id, transports: p.transports === '' ? [] : p.transports.split(',') })),
    });
  }

  /**
   * Checks an assertion against the one challenge it may answer, the
   * configured origin and RP ID, user verification (always for passwordless),
   * and the signature counter, then records the use. Never throws for a bad
   * answer: the caller counts the failure.
   */
  async verifyAssertion(response: AuthenticationResponseJSON, expectedChallenge: string, passwordless: boolean): Promise<AssertionResult> {
    const { origin, rpId } = this.rp();
    if (typeof response.id !== 'string' || response.id === '' || response.id.length > 1400) return { ok: false };
    const passkey = await this.repo.byCredential(response.id);
    if (!passkey) return { ok: false };
    if (passwordless) {
      // A discoverable credential names its user: it must be the administrator's handle.
      const handle = (await this.mfa.get()).webauthn_user_id;
      if (handle === null || response.response.userHandle !== handle) return { ok: false };
    }
    const stored = Number(passkey.counter);
    let info;
    try {
      const r = await (await simpleWebAuthn()).verifyAuthenticationResponse({
        response,
        expectedChallenge,
        expectedOrigin: origin,
        expectedRPID: rpId,
        // The counter is checked below, so that a counter going backwards is told apart from a bad signature.
        credential: { id: passkey.credential_id, publicKey: Buffer.from(passkey.public_key, 'base64url'), counter: 0, transports: [] },
        requireUserVerification: passwordless || this.settings.userVerification === 'required',
      });
      if (!r.verified) return { ok: false };
      info = r.authenticationInfo;
    } catch {
      return { ok: false };
    }
    const presented = info.newCounter;
    // An authenticator that counts never goes back: a counter at or below the stored one means a copy of the key.
    if ((stored > 0 || presented > 0) && presented <= stored) return { ok: false, clone: { passkey, stored, presented } };
    if (!(await this.repo.recordUse(passkey.id, stored, presented, this.clock.now(), info.credentialBackedUp))) return { ok: false };
    return { ok: true, passkey: { ...passkey, counter: presented } };
  }

  async policy(): Promise<PasskeyPolicyView> {
    const row = await this.mfa.get();
    const required = row.passkey_required !== null && (PASSKEY_REQUIREMENTS as readonly string[]).includes(row.passkey_required) ? (row.passkey_required as PasskeyRequirement) : null;
    return {
      passwordless: row.passkey_passwordless === null ? this.settings.passwordless : row.passkey_passwordless === 1,
      passwordless_source: row.passkey_passwordless === null ? 'default' : 'stored',
      required: required ?? this.settings.required,
      required_source: required === null ? 'default' : 'stored',
      configured: this.configured,
      rp_id: this.settings.rpId ?? null,
      origin: this.settings.origin ?? null,
      user_verification: this.settings.userVerification,
      attestation: 'none',
    };
  }

  /**
   * Changes the switches. Requiring passkeys, or turning passwordless on,
   * needs a passkey registered: else the administrator would lock themselves out.
   */
  async setPolicy(change: PasskeyPolicyChange): Promise<PasskeyPolicyView> {
    const next: { passkey_passwordless?: number; passkey_required?: string } = {};
    if (change.passwordless !== undefined) next.passkey_passwordless = change.passwordless ? 1 : 0;
    if (change.required !== undefined) next.passkey_required = change.required;
    if (Object.keys(next).length === 0) throw new AppError('validation', 'name at least one setting: passwordless or required');
    const turningOn = change.passwordless === true || (change.required !== undefined && change.required !== 'no');
    if (turningOn && (await this.repo.howMany()) === 0) throw badRequest('Register a passkey first (Security page, or POST /auth/mfa/passkeys/options then POST /auth/mfa/passkeys)');
    await this.mfa.update(next, this.clock.now());
    return this.policy();
  }

  dropCache(): void {
    this.repo.dropCache();
  }
}
