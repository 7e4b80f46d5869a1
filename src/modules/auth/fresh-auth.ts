import { AppError } from '../../shared/errors.js';
import type { AuthLog } from '../../shared/auth-log.js';
import type { Clock } from '../../shared/clock.js';
import type { MfaService } from '../mfa/index.js';
import type { AdminPrincipal } from '../route-types.js';
import type { AdminCredentials } from './admin-credentials.js';
import type { Lockout } from './lockout.js';

const NEEDED =
  'This action needs a fresh sign-in: sign in again (password and second factor), or send the password and a current TOTP code in X-Mailsvc-Reauth, and repeat it';
const NOT_ACCEPTED = 'The re-authentication in X-Mailsvc-Reauth was not accepted: it needs the administrator password and a current TOTP code';
const NO_TOTP = 'X-Mailsvc-Reauth takes a TOTP code, and TOTP is not enabled: sign in again with your second factor and repeat the action';

/** `<password>:<code>`, split at the last colon (a code has none; a password may). null: not base64 of that shape. */
function parseProof(value: string): { password: string; code: string } | null {
  if (value.length > 2048 || !/^[A-Za-z0-9+/=_-]+$/.test(value)) return null;
  const decoded = Buffer.from(value, 'base64').toString('utf8');
  const colon = decoded.lastIndexOf(':');
  if (colon < 0) return { password: decoded, code: '' };
  return { password: decoded.slice(0, colon), code: decoded.slice(colon + 1).trim() };
}

/**
 * Re-authentication for the actions that change how the administrator signs
 * in (route config `reauth: 'every-client'`), whatever the client: the
 * caller's own sign-in is at most `windowSeconds` old (an access token issued
 * that recently; Basic gives the password in the request itself), with the
 * second factor when one is enrolled; or the request carries the password and
 * a current TOTP code (X-Mailsvc-Reauth), checked under the lockout like a
 * sign-in. An API key is never a sign-in.
 */
export class FreshAuthentication {
  constructor(
    private readonly deps: {
      credentials: AdminCredentials;
      lockout: Lockout;
      mfa: Pick<MfaService, 'enrolledMethods' | 'verifyTotp'>;
      authLog: AuthLog;
      clock: Clock;
      windowSeconds: number;
    },
  ) {}

  /** Throws `reauth_required` (403) unless `principal` signed in recently enough or `proof` holds. */
  async assert(principal: AdminPrincipal, ip: string, proof: string | undefined): Promise<void> {
    const enrolled = (await this.deps.mfa.enrolledMethods()).length > 0;
    if (proof === undefined || proof === '') {
      if (this.recent(principal, enrolled)) return;
      throw new AppError('reauth_required', NEEDED);
    }
    await this.checkProof(ip, proof, enrolled);
  }

  private recent(principal: AdminPrincipal, enrolled: boolean): boolean {
    if (principal.via === 'api_key') return false;
    // Basic carries the password in this very request; a second factor it cannot carry.
    if (principal.via === 'basic') return !enrolled;
    if (principal.authenticatedAt === null || (enrolled && !principal.mfaVerified)) return false;
    return this.deps.clock.now() - principal.authenticatedAt <= this.deps.windowSeconds * 1000;
  }

  /** The password and (when a factor is enrolled) a TOTP code: a failure counts in the lockout and writes an auth-log line. */
  private async checkProof(ip: string, value: string, enrolled: boolean): Promise<void> {
    const { lockout, credentials, mfa, authLog } = this.deps;
    const proof = parseProof(value);
    if (enrolled && !(await mfa.enrolledMethods()).includes('totp')) throw new AppError('reauth_required', NO_TOTP);
    const { ok, attempt } = await lockout.guard(
      ip,
      async () => {
        if (proof === null || !(await credentials.check(credentials.username, proof.password))) return false;
        if (!enrolled) return proof.code === '';
        return /^\d{6}$/.test(proof.code) && (await mfa.verifyTotp(proof.code));
      },
      () => authLog.failure(credentials.username, ip),
    );
    if (!ok) throw new AppError('reauth_required', NOT_ACCEPTED);
    // As a Basic call: the slot comes back, the failures counted stay.
    await attempt.passed();
  }
}
