import type { FastifyReply, FastifyRequest } from 'fastify';
import { constantTimeEqual, hmacSha256, randomId, sha256 } from '../../shared/crypto.js';
import type { Clock } from '../../shared/clock.js';
import type { PortalRepository } from './portal.repository.js';

/** The portal's own cookie: never the admin panel's, never sent to it (both are host-only, Path=/). */
export const PORTAL_COOKIE = '__Host-mailsvc_portal';
/** Development over plain HTTP (MAILSVC_PANEL_DEV_HTTP, from loopback only): no __Host- prefix, no Secure. */
export const DEV_PORTAL_COOKIE = 'mailsvc_portal_dev';
export const CSRF_HEADER = 'x-portal-csrf';

/** A signed-in mailbox, as the portal's routes see it. */
export type PortalSession = { idHash: string; accountId: number; csrf: string; expiresAt: number };

export type PortalSessionPolicy = { idleSeconds: number; maxSeconds: number };

/**
 * Server-side sessions of mailbox users. The cookie holds 256 random bits, the
 * table their SHA-256 and the account id; the CSRF token is an HMAC of the
 * session id under a key of its own (never stored, bound to the session).
 */
export class PortalSessions {
  private lastPrune = 0;

  constructor(
    private readonly repo: PortalRepository,
    private readonly csrfKey: Buffer,
    private readonly clock: Clock,
    private readonly policy: PortalSessionPolicy,
  ) {}

  async start(accountId: number): Promise<{ cookie: string; session: PortalSession }> {
    const now = this.clock.now();
    const cookie = randomId(32);
    const idHash = sha256(cookie).toString('hex');
    const expiresAt = now + this.policy.maxSeconds * 1000;
    await this.repo.insertSession({ id_hash: idHash, account_id: accountId, created_at: now, last_seen_at: now, expires_at: expiresAt });
    return { cookie, session: this.view(idHash, accountId, expiresAt) };
  }

  /** The live session of a cookie value (its idle time restarted), or null. */
  async resume(cookie: string | undefined): Promise<PortalSession | null> {
    if (!cookie || cookie.length > 128) return null;
    const now = this.clock.now();
    if (now - this.lastPrune >= 60_000) {
      this.lastPrune = now;
      await this.repo.pruneSessions(now, now - this.policy.idleSeconds * 1000);
    }
    const idHash = sha256(cookie).toString('hex');
    const row = await this.repo.findSession(idHash);
    if (!row) return null;
    if (Number(row.expires_at) <= now || Number(row.last_seen_at) + this.policy.idleSeconds * 1000 <= now) {
      await this.repo.removeSession(idHash);
      return null;
    }
    await this.repo.touchSession(idHash, now);
    return this.view(idHash, Number(row.account_id), Number(row.expires_at));
  }

  end(session: PortalSession): Promise<unknown> {
    return this.repo.removeSession(session.idHash);
  }

  csrfMatches(session: PortalSession, given: unknown): boolean {
    return typeof given === 'string' && given.length > 0 && given.length < 128 && constantTimeEqual(given, session.csrf);
  }

  private view(idHash: string, accountId: number, expiresAt: number): PortalSession {
    return { idHash, accountId, csrf: hmacSha256(this.csrfKey, idHash).toString('base64url'), expiresAt };
  }
}

export function readPortalCookie(req: FastifyRequest, dev: boolean): string | undefined {
  const name = dev ? DEV_PORTAL_COOKIE : PORTAL_COOKIE;
  for (const part of (req.headers.cookie ?? '').split(';')) {
    const eq = part.indexOf('=');
    if (eq > 0 && part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim();
  }
  return undefined;
}

/** Host-only, HttpOnly, SameSite=Strict, no Max-Age (the server ends it earlier). */
export function setPortalCookie(reply: FastifyReply, dev: boolean, value: string | null): void {
  const name = dev ? DEV_PORTAL_COOKIE : PORTAL_COOKIE;
  reply.header('set-cookie', `${name}=${value ?? ''}; Path=/; HttpOnly; SameSite=Strict${value === null ? '; Max-Age=0' : ''}${dev ? '' : '; Secure'}`);
}
