import { randomInt } from 'node:crypto';
import type { Clock } from '../../shared/clock.js';
import { AppError, badRequest, unauthenticated } from '../../shared/errors.js';
import { constantTimeEqual, hmacSha256, randomId } from '../../shared/crypto.js';
import type { AuthLog } from '../../shared/auth-log.js';
import type { MfaService } from '../mfa/index.js';
import type { SmsSender } from '../sms/index.js';
import type { AdminCredentials } from './admin-credentials.js';
import type { ChallengeStore, Method } from './challenge-store.js';
import type { Lockout } from './lockout.js';
import type { AccessTokenResponse, TokenService } from './token.service.js';

export type ChallengeResponse = { mfa_required: true; challenge_id: string; methods: Method[]; expires_in: number };
export type SmsSendResponse = { ok: true; method: 'sms'; expires_in: number; phone_hint: string };

export type AuthPolicy = { mfaRequired: boolean; allowBasicWithoutToken: boolean; challengeTtlSeconds: number };

const MFA_NOT_ENROLLED =
  'MFA is required: enroll TOTP or configure SMS MFA first (POST /auth/mfa/totp/enroll or PATCH /auth/mfa/sms, with Basic credentials)';

export class AuthService {
  constructor(
    private readonly deps: {
      credentials: AdminCredentials;
      lockout: Lockout;
      challenges: ChallengeStore;
      tokens: TokenService;
      mfa: MfaService;
      sms: SmsSender;
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

  /** Registers a failure (auth log line, lockout count); throws 429 when it goes past the limit, else `err`. */
  private async fail(user: string, ip: string, err: AppError): Promise<never> {
    this.deps.authLog.failure(user, ip);
    await this.deps.lockout.registerFailure(ip);
    throw err;
  }

  async login(ip: string, username: string, password: string): Promise<AccessTokenResponse | ChallengeResponse> {
    const { lockout, credentials, mfa, challenges, tokens, clock, policy } = this.deps;
    await lockout.assertOpen(ip);
    if (!(await credentials.check(username, password))) return this.fail(username, ip, unauthenticated('Invalid credentials'));
    const methods = await mfa.enrolledMethods();
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
    await lockout.clear(ip);
    return tokens.issue(credentials.username, false);
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
    const code = String(randomInt(0, 1_000_000)).padStart(6, '0');
    const reserved = await challenges.reserveSmsSend(challengeId, this.codeHash(challengeId, code));
    if (reserved === 'missing') throw unauthenticated('Invalid or expired challenge');
    if (reserved === 'limit') throw new AppError('rate_limited', 'SMS send limit for this challenge reached: sign in again');
    await sms.sendCode(mfa.smsProviderOf(record), phone, code);
    const expiresIn = Math.max(0, Math.ceil((challenge.expiresAt - clock.now()) / 1000));
    return { ok: true, method: 'sms', expires_in: expiresIn, phone_hint: `***${phone.slice(-3)}` };
  }

  async verify(ip: string, challengeId: string, method: Method, code: string): Promise<AccessTokenResponse> {
    const { lockout, challenges, mfa, tokens, credentials } = this.deps;
    await lockout.assertOpen(ip);
    const challenge = await challenges.get(challengeId);
    if (!challenge) return this.fail(credentials.username, ip, unauthenticated('Invalid or expired challenge'));
    if (!challenge.methods.includes(method)) {
      return this.fail(challenge.subject, ip, badRequest(`Method ${method} is not offered by this challenge`));
    }
    let ok = false;
    if (method === 'totp') ok = await mfa.verifyTotp(code);
    else ok = challenge.smsCodeHash !== null && constantTimeEqual(this.codeHash(challengeId, code), challenge.smsCodeHash);
    if (!ok) {
      await challenges.recordFailure(challengeId);
      return this.fail(challenge.subject, ip, unauthenticated('Invalid code'));
    }
    if (!(await challenges.consume(challengeId))) {
      return this.fail(challenge.subject, ip, unauthenticated('Invalid or expired challenge'));
    }
    await lockout.clear(ip);
    return tokens.issue(challenge.subject || credentials.username, true);
  }

  async logout(token: string | undefined): Promise<{ ok: true }> {
    if (token) await this.deps.tokens.revoke(token);
    return { ok: true };
  }
}
