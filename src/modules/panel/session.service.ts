import { hmacSha256, randomId, sha256, constantTimeEqual } from '../../shared/crypto.js';
import type { Clock } from '../../shared/clock.js';
import type { SecretBox } from '../../shared/secret-box.js';
import type { PanelSessionRepository } from './session.repository.js';

export type SessionPolicy = { idleSeconds: number; maxSeconds: number; reauthSeconds: number };

/** A live session as the panel's routes see it. */
export type PanelSession = {
  idHash: string;
  /** The access token the sign-in earned: the panel's API calls carry it as Bearer. */
  token: string;
  csrf: string;
  expiresAt: number;
  idleUntil: number;
  freshUntil: number;
};

const SEAL_CONTEXT = 'panel-session-token';

/**
 * Server-side panel sessions. The cookie holds 256 random bits; the table
 * holds their SHA-256 (a copy of the database is no session) and the sealed
 * token. The CSRF token is an HMAC of the session id under a key derived from
 * the secret key, so it is bound to the session and never stored.
 */
export class PanelSessionService {
  private lastPrune = 0;

  constructor(
    private readonly repo: PanelSessionRepository,
    private readonly box: Pick<SecretBox, 'seal' | 'open'>,
    private readonly csrfKey: Buffer,
    private readonly clock: Clock,
    private readonly policy: SessionPolicy,
  ) {}

  /** Starts a session for a token that expires in `tokenTtlSeconds`; answers the cookie value. */
  async start(token: string, tokenTtlSeconds: number): Promise<{ cookie: string; session: PanelSession }> {
    const now = this.clock.now();
    const cookie = randomId(32);
    const idHash = sha256(cookie).toString('hex');
    const expiresAt = now + Math.min(this.policy.maxSeconds, tokenTtlSeconds) * 1000;
    const freshUntil = now + this.policy.reauthSeconds * 1000;
    await this.repo.insert({ id_hash: idHash, token_sealed: this.box.seal(token, SEAL_CONTEXT), created_at: now, last_seen_at: now, expires_at: expiresAt, fresh_until: freshUntil });
    return { cookie, session: this.view(idHash, token, expiresAt, now, freshUntil) };
  }

  /** The live session of a cookie value, its idle time restarted; null when unknown, idle too long or past its end. */
  async resume(cookie: string | undefined): Promise<PanelSession | null> {
    if (!cookie || cookie.length > 128) return null;
    const now = this.clock.now();
    await this.pruneNow(now);
    const idHash = sha256(cookie).toString('hex');
    const row = await this.repo.find(idHash);
    if (!row) return null;
    if (Number(row.expires_at) <= now || Number(row.last_seen_at) + this.policy.idleSeconds * 1000 <= now) {
      await this.repo.remove(idHash);
      return null;
    }
    await this.repo.touch(idHash, now);
    return this.view(idHash, this.box.open(row.token_sealed, SEAL_CONTEXT), Number(row.expires_at), now, Number(row.fresh_until));
  }

  /** Ends a session server-side; answers its token so the caller can revoke it. */
  async end(session: PanelSession): Promise<void> {
    await this.repo.remove(session.idHash);
  }

  csrfMatches(session: PanelSession, given: string | undefined): boolean {
    return typeof given === 'string' && given.length > 0 && constantTimeEqual(given, session.csrf);
  }

  isFresh(session: PanelSession): boolean {
    return this.clock.now() < session.freshUntil;
  }

  private view(idHash: string, token: string, expiresAt: number, now: number, freshUntil: number): PanelSession {
    const csrf = hmacSha256(this.csrfKey, idHash).toString('base64url');
    return { idHash, token, csrf, expiresAt, idleUntil: Math.min(expiresAt, now + this.policy.idleSeconds * 1000), freshUntil };
  }

  /** Dead rows go at most once a minute, on a request that needs the table anyway. */
  private async pruneNow(now: number): Promise<void> {
    if (now - this.lastPrune < 60_000) return;
    this.lastPrune = now;
    await this.repo.prune(now, now - this.policy.idleSeconds * 1000);
  }
}
