import { randomInt } from 'node:crypto';
import type { Static } from '@sinclair/typebox';
import type { ChallengeResponse as ChallengeSchema, PasskeyOptionsResponse as PasskeyOptionsSchema, SmsSendResponse as SmsSendSchema } from './schema.js';
import type { Clock } from '../../shared/clock.js';
import { AppError, badRequest, unauthenticated } from '../../shared/errors.js';
import { constantTimeEqual, hmacSha256, randomId } from '../../shared/crypto.js';
import type { AuthLog } from '../../shared/auth-log.js';
import type { AuthenticationResponseJSON } from '@simplewebauthn/server';
import type { MfaService, PasskeyService } from '../mfa/index.js';
import type { SmsSender } from '../sms/index.js';
import type { AdminCredentials } from './admin-credentials.js';
import { MAX_SMS_SENDS } from './challenge-store.js';
import type { Challenge, ChallengeStore, Method } from './challenge-store.js';
import type { Lockout } from './lockout.js';
import type { SmsSendLimits } from './sms-send-limits.js';
import type { AccessTokenResponse, TokenService } from './token.service.js';

export type ChallengeResponse = Static<typeof ChallengeSchema>;
export type SmsSendResponse = Static<typeof SmsSendSchema>;
export type PasskeyOptionsResponse = Static<typeof PasskeyOptionsSchema>;
/** Where a sign-in comes from: the passkey policy may refuse the phishable factors in the panel only. */
export type Channel = 'api' | 'panel';
/** A passkey's counter went backwards: recorded in the audit log as a possible clone. */
export type PasskeyCloneEvent = { ip: string; passkeyId: string; name: string; stored: number; presented: number };

export type AuthPolicy = { mfaRequired: boolean; allowBasicWithoutToken: boolean; challengeTtlSeconds: number };

const MFA_NOT_ENROLLED =
  'MFA is required: enroll TOTP or configure SMS MFA first (POST /auth/mfa/totp/enroll or PATCH /auth/mfa/sms, with Basic credentials)';

const SMS_CHALLENGE_LIMIT = 'SMS send limit for this challenge reached: sign in again';

export class AuthService {
  constructor(
    private readonly deps: {
      credentials: AdminCredentials;
      lockout: Lockout;
      challenges: ChallengeStore;
      tokens: TokenService;
      mfa: MfaService;
      passkeys: PasskeyService;
      onPasskeyClone: (event: PasskeyCloneEvent) => Promise<unknown>;
      sms: SmsSender;
      smsLimits: SmsSendLimits;
      authLog: AuthLog;
      clock: Clock;
      policy: AuthPolicy;
      codeKey: Buffer;
    },
  ) {}

  /** True when a password alone may act: MFA not required, or the emergency switch. */
  get passwordAloneAllowed(): boolean {
    return !this.deps.policy.mfaRequired || this.deps.policy.allowBasicWithoutToken;
  }

  async login(ip: string, username: string, password: string, channel: Channel = 'api'): Promise<AccessTokenResponse | ChallengeResponse> {
    const { lockout, credentials, challenges, tokens, clock, policy, authLog } = this.deps;
    // The factors enrolled are read while argon2 runs (they do not depend on the password, and
    // nothing is answered before the password is right); a read that failed is seen only then.
    let methodsRead: Promise<Method[]> | undefined;
    // The slot is reserved before the password is looked at (see Lockout).
    const { ok, attempt } = await lockout.guard(
      ip,
      () => {
        const check = credentials.check(username, password);
        methodsRead = this.challengeMethods(channel);
        methodsRead.catch(() => undefined);
        return check;
      },
      () => authLog.failure(username, ip),
    );
    if (!ok) throw unauthenticated('Invalid credentials');
    try {
      const methods = await (methodsRead ?? this.challengeMethods(channel));
      if (methods.length > 0) {
        const id = randomId(24);
        await challenges.create({
          id,
          kind: 'signin',
          subject: credentials.username,
          methods,
          expiresAt: clock.now() + policy.challengeTtlSeconds * 1000,
          failures: 0,
          smsSends: 0,
          smsCodeHash: null,
          webauthn: null,
        });
        return { mfa_required: true, challenge_id: id, methods, expires_in: policy.challengeTtlSeconds };
      }
      if (!this.passwordAloneAllowed) {
        throw new AppError('forbidden', MFA_NOT_ENROLLED);
      }
      // Both after the password was found right: the failures forgotten and the token written at once.
      const [, token] = await Promise.all([attempt.signedIn(), tokens.issue(credentials.username, false)]);
      return token;
    } finally {
      // A challenge or a refusal gives the slot back without clearing the failures.
      await attempt.passed();
    }
  }

  private codeHash(challengeId: string, code: string): string {
    return hmacSha256(this.deps.codeKey, `${challengeId}:${code}`).toString('hex');
  }

  async sendSms(ip: string, challengeId: string): Promise<SmsSendResponse> {
    const { lockout, challenges, mfa, sms, clock } = this.deps;
    await lockout.assertOpen(ip);
    const challenge = await challenges.get(challengeId);
    if (!challenge || challenge.kind !== 'signin') throw unauthenticated('Invalid or expired challenge');
    if (!challenge.methods.includes('sms')) throw badRequest('SMS is not a method of this challenge');
    const record = await mfa.record();
    const phone = record.sms_phone;
    if (record.sms_enabled !== 1 || phone === null) throw badRequest('SMS MFA is not enabled or no phone is stored');
    if (challenge.smsSends >= MAX_SMS_SENDS) throw new AppError('rate_limited', SMS_CHALLENGE_LIMIT);
    await this.deps.smsLimits.consume(ip, phone);
    const code = String(randomInt(0, 1_000_000)).padStart(6, '0');
    const reserved = await challenges.reserveSmsSend(challengeId, this.codeHash(challengeId, code));
    if (reserved === 'missing') throw unauthenticated('Invalid or expired challenge');
    if (reserved === 'limit') throw new AppError('rate_limited', SMS_CHALLENGE_LIMIT);
    await sms.sendCode(mfa.smsProviderOf(record), phone, code);
    const expiresIn = Math.max(0, Math.ceil((challenge.expiresAt - clock.now()) / 1000));
    return { ok: true, method: 'sms', expires_in: expiresIn, phone_hint: `***${phone.slice(-3)}` };
  }

  async verify(ip: string, challengeId: string, method: Method, code: string, channel: Channel = 'api'): Promise<AccessTokenResponse> {
    return this.answerChallenge(
      ip,
      challengeId,
      async (challenge) => {
        if (!challenge.methods.includes(method)) throw badRequest(`Method ${method} is not offered by this challenge`);
        if (method === 'webauthn') throw badRequest('A passkey answers with POST /auth/mfa/webauthn/options, then POST /auth/mfa/webauthn/verify');
        await this.assertAllowed(method, channel);
      },
      (challenge) => this.checkCode(challenge, method, code, ip),
      'Invalid code',
    );
  }

  /**
   * A sign-in challenge answered under the lockout: every way this fails
   * counts, and the slot is reserved before the challenge or the answer is
   * looked at. `admit` refuses a method the challenge does not take; `check`
   * says whether the answer is right: a wrong one is recorded on the
   * challenge and refused with `wrong`. The challenge is used once; the token
   * is MFA-verified.
   */
  private async answerChallenge(
    ip: string,
    challengeId: string,
    admit: (challenge: Challenge) => Promise<void>,
    check: (challenge: Challenge) => Promise<boolean>,
    wrong: string,
  ): Promise<AccessTokenResponse> {
    const { lockout, challenges, tokens, credentials, authLog } = this.deps;
    let subject = credentials.username;
    const { attempt } = await lockout.guard(
      ip,
      async () => {
        const challenge = await challenges.get(challengeId);
        if (!challenge || challenge.kind !== 'signin') throw unauthenticated('Invalid or expired challenge');
        await admit(challenge);
        subject = challenge.subject || credentials.username;
        if (!(await check(challenge))) {
          await challenges.recordFailure(challengeId);
          throw unauthenticated(wrong);
        }
        if (!(await challenges.consume(challengeId))) throw unauthenticated('Invalid or expired challenge');
        return true;
      },
      () => authLog.failure(subject, ip),
    );
    await attempt.signedIn();
    return tokens.issue(subject, true);
  }

  private async checkCode(challenge: Challenge, method: Method, code: string, ip: string): Promise<boolean> {
    if (method === 'totp') return this.deps.mfa.verifyTotp(code);
    if (method === 'recovery') return this.deps.mfa.useRecoveryCode(code, ip);
    return challenge.smsCodeHash !== null && constantTimeEqual(this.codeHash(challenge.id, code), challenge.smsCodeHash);
  }

  /** Whether the passkey policy leaves only `webauthn` for this channel (and a passkey is registered). */
  private async passkeyOnly(channel: Channel): Promise<boolean> {
    const { required } = await this.deps.passkeys.policy();
    const applies = required === 'all' || (required === 'panel' && channel === 'panel');
    return applies && (await this.deps.passkeys.count()) > 0;
  }

  private async assertAllowed(method: Method, channel: Channel): Promise<void> {
    if (method !== 'webauthn' && (await this.passkeyOnly(channel))) {
      throw new AppError('forbidden', `The passkey policy requires a passkey ${channel === 'panel' ? 'in the panel' : 'to sign in'}: ${method} is refused`);
    }
  }

  /**
   * The methods a challenge offers: the enrolled second factors, and
   * `recovery` while TOTP has unused recovery codes; `webauthn` alone when the
   * passkey policy requires it for this channel.
   */
  private async challengeMethods(channel: Channel): Promise<Method[]> {
    const methods: Method[] = await this.deps.mfa.enrolledMethods();
    if (methods.includes('totp') && (await this.deps.mfa.recoveryCodesRemaining()) > 0) methods.push('recovery');
    if (methods.includes('webauthn') && (await this.passkeyOnly(channel))) return ['webauthn'];
    return methods;
  }

  /** The assertion options for a sign-in challenge that offers `webauthn`; its WebAuthn challenge is kept with it, for one answer. */
  async webauthnOptions(ip: string, challengeId: string): Promise<PasskeyOptionsResponse> {
    const { lockout, challenges, passkeys, clock } = this.deps;
    await lockout.assertOpen(ip);
    const challenge = await challenges.get(challengeId);
    if (!challenge || challenge.kind !== 'signin') throw unauthenticated('Invalid or expired challenge');
    if (!challenge.methods.includes('webauthn')) throw badRequest('A passkey is not a method of this challenge');
    const options = await passkeys.authenticationOptions(false);
    // The WebAuthn challenge lives MAILSVC_WEBAUTHN_TIMEOUT (never past its sign-in challenge), whatever is left of the sign-in.
    const expiresAt = Math.min(clock.now() + passkeys.timeoutSeconds * 1000, challenge.expiresAt);
    if (!(await challenges.setWebauthn(challengeId, { challenge: options.challenge, expiresAt }))) throw unauthenticated('Invalid or expired challenge');
    const expiresIn = Math.max(0, Math.floor((expiresAt - clock.now()) / 1000));
    return { challenge_id: challengeId, expires_in: expiresIn, options: options as unknown as Record<string, unknown> };
  }

  /**
   * Checks a passkey's assertion for a sign-in challenge. The WebAuthn
   * challenge is taken (once) before the answer is checked: a replayed
   * assertion finds none. Every failure counts in the lockout, like a wrong code.
   */
  async verifyWebauthn(ip: string, challengeId: string, credential: AuthenticationResponseJSON): Promise<AccessTokenResponse> {
    const { challenges } = this.deps;
    return this.answerChallenge(
      ip,
      challengeId,
      async (challenge) => {
        if (!challenge.methods.includes('webauthn')) throw badRequest('A passkey is not a method of this challenge');
      },
      async () => {
        const expected = await challenges.takeWebauthn(challengeId);
        if (expected === null) throw unauthenticated('No passkey request is pending for this challenge, or it expired: ask for the options again');
        return this.checkAssertion(ip, credential, expected, false);
      },
      'The passkey was not accepted',
    );
  }

  private async checkAssertion(ip: string, credential: AuthenticationResponseJSON, expected: string, passwordless: boolean): Promise<boolean> {
    const result = await this.deps.passkeys.verifyAssertion(credential, expected, passwordless);
    if (!result.ok && result.clone) {
      const { passkey, stored, presented } = result.clone;
      await this.deps.onPasskeyClone({ ip, passkeyId: passkey.id, name: passkey.name, stored, presented });
    }
    return result.ok;
  }

  /** Passwordless sign-in is on, passkeys are configured and one is registered (the sign-in page offers it). */
  async passwordlessAvailable(): Promise<boolean> {
    const { passkeys } = this.deps;
    return passkeys.configured && (await passkeys.policy()).passwordless && (await passkeys.count()) > 0;
  }

  private async passwordlessOn(): Promise<void> {
    if (!(await this.passwordlessAvailable())) {
      throw new AppError('forbidden', 'Passwordless sign-in is off (or no passkey is registered): sign in with the password');
    }
  }

  /** Passwordless sign-in, step one: a challenge of its own and options for any discoverable passkey of this site. */
  async passwordlessOptions(ip: string): Promise<PasskeyOptionsResponse> {
    const { lockout, challenges, passkeys, clock, credentials } = this.deps;
    await this.passwordlessOn();
    await lockout.assertOpen(ip);
    const options = await passkeys.authenticationOptions(true);
    const id = randomId(24);
    const expiresAt = clock.now() + passkeys.timeoutSeconds * 1000;
    await challenges.create({
      id,
      kind: 'passwordless',
      subject: credentials.username,
      methods: ['webauthn'],
      expiresAt,
      failures: 0,
      smsSends: 0,
      smsCodeHash: null,
      webauthn: { challenge: options.challenge, expiresAt },
    });
    return { challenge_id: id, expires_in: passkeys.timeoutSeconds, options: options as unknown as Record<string, unknown> };
  }

  /** Passwordless sign-in, step two: a discoverable passkey of the administrator, with user verification, answers an MFA-verified token. */
  async passwordlessVerify(ip: string, challengeId: string, credential: AuthenticationResponseJSON): Promise<AccessTokenResponse> {
    const { lockout, challenges, tokens, credentials, authLog } = this.deps;
    await this.passwordlessOn();
    const { attempt } = await lockout.guard(
      ip,
      async () => {
        const challenge = await challenges.get(challengeId);
        if (!challenge || challenge.kind !== 'passwordless') throw unauthenticated('Invalid or expired challenge');
        const expected = await challenges.takeWebauthn(challengeId);
        // One answer per passwordless challenge, right or wrong.
        await challenges.consume(challengeId);
        if (expected === null) throw unauthenticated('Invalid or expired challenge');
        if (!(await this.checkAssertion(ip, credential, expected, true))) throw unauthenticated('The passkey was not accepted');
        return true;
      },
      () => authLog.failure('passkey', ip),
    );
    await attempt.signedIn();
    return tokens.issue(credentials.username, true);
  }

  async logout(token: string | undefined): Promise<{ ok: true }> {
    if (token) await this.deps.tokens.revoke(token);
    return { ok: true };
  }
}
