import { randomInt } from 'node:crypto';
import type { Static } from '@sinclair/typebox';
import type { ChallengeResponse as ChallengeSchema, SmsSendResponse as SmsSendSchema } from './schema.js';
import type { Clock } from '../../shared/clock.js';
import { AppError, badRequest, unauthenticated } from '../../shared/errors.js';
import { constantTimeEqual, hmacSha256, randomId } from '../../shared/crypto.js';
import type { AuthLog } from '../../shared/auth-log.js';
import type { MfaService } from '../mfa/index.js';
import type { SmsSender } from '../sms/index.js';
import type { AdminCredentials } from './admin-credentials.js';
import { MAX_SMS_SENDS } from './challenge-store.js';
import type { Challenge, ChallengeStore, Method } from './challenge-store.js';
import type { Lockout } from './lockout.js';
import type { SmsSendLimits } from './sms-send-limits.js';
import type { AccessTokenResponse, TokenService } from './token.service.js';

export type ChallengeResponse = Static<typeof ChallengeSchema>;
export type SmsSendResponse = Static<typeof SmsSendSchema>;

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

  async login(ip: string, username: string, password: string): Promise<AccessTokenResponse | ChallengeResponse> {
    const { lockout, credentials, challenges, tokens, clock, policy, authLog } = this.deps;
    // The slot is reserved before the password is looked at (see Lockout).
    const { ok, attempt } = await lockout.guard(ip, () => credentials.check(username, password), () => authLog.failure(username, ip));
    if (!ok) throw unauthenticated('Invalid credentials');
    try {
      const methods = await this.challengeMethods();
      if (methods.length > 0) {
        const id = randomId(24);
        await challenges.create({
          id,
          subject: credentials.username,
          methods,
          expiresAt: clock.now() + policy.challengeTtlSeconds * 1000,
          failures: 0,
          smsSends: 0,
          smsCodeHash: null,
        });
        return { mfa_required: true, challenge_id: id, methods, expires_in: policy.challengeTtlSeconds };
      }
      if (!this.passwordAloneAllowed) {
        throw new AppError('forbidden', MFA_NOT_ENROLLED);
      }
      await attempt.signedIn();
      return await tokens.issue(credentials.username, false);
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
    if (!challenge) throw unauthenticated('Invalid or expired challenge');
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

  async verify(ip: string, challengeId: string, method: Method, code: string): Promise<AccessTokenResponse> {
    const { lockout, challenges, tokens, credentials, authLog } = this.deps;
    let subject = credentials.username;
    // Every way this fails counts, and the slot is reserved before the challenge or the code is looked at.
    const { attempt } = await lockout.guard(
      ip,
      async () => {
        const challenge = await challenges.get(challengeId);
        if (!challenge) throw unauthenticated('Invalid or expired challenge');
        if (!challenge.methods.includes(method)) throw badRequest(`Method ${method} is not offered by this challenge`);
        subject = challenge.subject || credentials.username;
        if (!(await this.checkCode(challenge, method, code, ip))) {
          await challenges.recordFailure(challengeId);
          throw unauthenticated('Invalid code');
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

  /** The methods a challenge offers: the enrolled second factors, and `recovery` while TOTP has unused recovery codes. */
  private async challengeMethods(): Promise<Method[]> {
    const methods: Method[] = await this.deps.mfa.enrolledMethods();
    if (methods.includes('totp') && (await this.deps.mfa.recoveryCodesRemaining()) > 0) methods.push('recovery');
    return methods;
  }

  async logout(token: string | undefined): Promise<{ ok: true }> {
    if (token) await this.deps.tokens.revoke(token);
    return { ok: true };
  }
}
