import { AppError } from '../../shared/errors.js';
import type { AuthLog } from '../../shared/auth-log.js';
import type { Attempt, Lockout } from '../auth/index.js';
import type { PortalSession, PortalSessions } from './portal-session.js';

/** Wrong answers (current password, TOTP code) one portal session may give before it is ended. */
export const SESSION_WRONG_ANSWERS = 3;

/**
 * The portal's counters: per client address and per mailbox (the sign-in's,
 * apart from the admin API's), and per session (the secrets typed inside one).
 * The mailbox's key is always its canonical address (loginKey), so no spelling
 * of it and no way in (sign-in, a check inside a session) counts apart.
 */
export type PortalLockouts = { ip: Lockout; address: Lockout; session: Lockout };

/** Reserves one attempt in each lockout, in order; one that is blocked gives the others back and throws its 429. */
export async function reserveAll(pairs: readonly (readonly [Lockout, string])[]): Promise<Attempt[]> {
  const held: Attempt[] = [];
  try {
    for (const [lockout, key] of pairs) held.push(await lockout.reserve(key));
  } catch (err) {
    await Promise.all(held.map((a) => a.passed()));
    throw err;
  }
  return held;
}

/**
 * A secret typed inside a signed-in session (the current password on a
 * password change, a TOTP code to confirm or switch off TOTP) is a guess like
 * a sign-in: counted in the client address's and the mailbox's lockouts (a
 * blocked one is 429 before anything is checked), written to the auth log for
 * fail2ban (mailsvc-portal), and after SESSION_WRONG_ANSWERS wrong answers in
 * one session the session ends (401).
 */
export class InSessionChecks {
  constructor(private readonly d: { lockouts: PortalLockouts; authLog: AuthLog; sessions: Pick<PortalSessions, 'end'> }) {}

  /**
   * `check` answers true (right), false (wrong: counted) or throws (not a
   * guess, e.g. no enrolment waiting: nothing counted). Returns whether it was right.
   */
  async run(session: PortalSession, address: string, ip: string, check: () => Promise<boolean>): Promise<boolean> {
    const { lockouts, authLog, sessions } = this.d;
    const attempts = await reserveAll([
      [lockouts.ip, ip],
      [lockouts.address, address],
      [lockouts.session, session.idHash],
    ]);
    let ok: boolean;
    try {
      ok = await check();
    } catch (err) {
      await Promise.all(attempts.map((a) => a.passed()));
      throw err;
    }
    if (ok) {
      await Promise.all(attempts.map((a) => a.passed()));
      return true;
    }
    authLog.failure(address, ip, 'mailsvc-portal');
    await Promise.all(attempts.map((a) => a.failed()));
    if (await lockouts.session.isBlocked(session.idHash)) {
      await sessions.end(session);
      throw new AppError('unauthenticated', 'Too many wrong answers: this session has ended, sign in again');
    }
    return false;
  }
}
