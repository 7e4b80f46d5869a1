import { AppError, unauthenticated } from '../../shared/errors.js';
import type { AuthLog } from '../../shared/auth-log.js';
import type { MfaService } from '../mfa/index.js';
import type { AdminPrincipal } from '../route-types.js';
import type { AdminCredentials } from './admin-credentials.js';
import type { Lockout } from './lockout.js';
import type { TokenService } from './token.service.js';
import type { FreshAuthentication } from './fresh-auth.js';
import { looksLikeApiKey } from '../api-keys/index.js';
import type { ApiKeyPrincipal, ApiKeyVerifier } from '../api-keys/index.js';
import type { ApiKeyScope, RouteAccess } from '../route-types.js';

export type { AdminPrincipal };

export type AdminRequest = {
  ip: string;
  authorization: string | undefined;
  /** The /auth/mfa setup paths, open to Basic and to tokens without a second factor until a factor is enrolled. */
  setupPath: boolean;
  /** The route called (method, pattern, declared scope, MFA-verified rule); absent means no API key may pass. */
  route?: RouteAccess;
};

const MFA_TOKEN_REQUIRED = 'Bearer token required: this endpoint needs a token earned with the second factor; sign in with it';

/** The scope an API key needs for the route: `read` for a GET, else the route's own (or `admin`). */
export function scopeNeeded(route: RouteAccess): ApiKeyScope {
  if (route.method === 'GET' || route.method === 'HEAD') return 'read';
  return route.scope ?? 'admin';
}

const NOT_ENROLLED =
  'MFA is required but not enrolled: enroll TOTP or configure SMS MFA first, under /auth/mfa';

function parseBasic(value: string): { user: string; pass: string } | null {
  const decoded = Buffer.from(value, 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  if (colon < 0) return null;
  return { user: decoded.slice(0, colon), pass: decoded.slice(colon + 1) };
}

/** Who may call an Admin endpoint (docs/contract.md, Errors; docs/auth.md, API keys). */
export class AdminGuard {
  constructor(
    private readonly deps: {
      tokens: TokenService;
      credentials: AdminCredentials;
      lockout: Lockout;
      mfa: MfaService;
      authLog: AuthLog;
      apiKeys: ApiKeyVerifier;
      passwordAloneAllowed: boolean;
      fresh: FreshAuthentication;
    },
  ) {}

  /** For a route marked `reauth: 'every-client'`: 403 `reauth_required` unless the sign-in is recent or `proof` (X-Mailsvc-Reauth) holds. */
  assertFresh(principal: AdminPrincipal, ip: string, proof: string | undefined): Promise<void> {
    return this.deps.fresh.assert(principal, ip, proof);
  }

  async authenticate(req: AdminRequest): Promise<AdminPrincipal> {
    try {
      return await this.check(req);
    } catch (err) {
      // Once Basic is refused, a 401 stops offering it (WWW-Authenticate names Bearer alone).
      if (err instanceof AppError && (err.code === 'unauthenticated' || err.code === 'bearer_required') && !this.deps.passwordAloneAllowed && (await this.enrolled())) {
        throw new AppError(err.code, err.detail, { ...err.extra, bearerOnly: true });
      }
      throw err;
    }
  }

  /**
   * `authenticate` without waiting, when a Bearer token this process holds
   * decides it: the principal `authenticate` would give. undefined for
   * everything else (Basic, API keys, a refusal, a token whose row must be
   * read, a rule that asks the MFA record): `authenticate` answers those.
   */
  authenticateNow(req: AdminRequest): AdminPrincipal | undefined {
    const header = req.authorization;
    if (header === undefined || header.length < 8 || header.slice(0, 7).toLowerCase() !== 'bearer ') return undefined;
    const token = header.slice(7).trim();
    if (token === '' || looksLikeApiKey(token)) return undefined;
    const principal = this.deps.tokens.validateNow(token);
    if (!principal) return undefined;
    // The rules below that read the MFA record (enrolled or not) are left to authenticate.
    if (!principal.mfaVerified && (!this.deps.passwordAloneAllowed || req.route?.mfaVerified)) return undefined;
    return { subject: principal.subject, via: 'bearer', mfaVerified: principal.mfaVerified, tokenId: principal.tokenId, authenticatedAt: principal.issuedAt };
  }

  private async check(req: AdminRequest): Promise<AdminPrincipal> {
    const header = req.authorization ?? '';
    const space = header.indexOf(' ');
    const scheme = (space < 0 ? header : header.slice(0, space)).toLowerCase();
    const value = space < 0 ? '' : header.slice(space + 1).trim();
    if (scheme === 'bearer' && value !== '') return looksLikeApiKey(value) ? this.apiKey(value, req) : this.bearer(value, req);
    if (scheme === 'basic' && value !== '') return this.basic(value, req);
    throw unauthenticated('Authentication required');
  }

  private async bearer(token: string, req: AdminRequest): Promise<AdminPrincipal> {
    const principal = await this.deps.tokens.validate(token);
    if (!principal) throw unauthenticated('Invalid or expired token');
    // A token issued without a second factor is held to exactly the rules of Basic:
    // once a factor is enrolled it is refused everywhere, the /auth/mfa setup paths included,
    // so it can never replace the factor.
    if (!principal.mfaVerified && !this.deps.passwordAloneAllowed) {
      const enrolled = (await this.deps.mfa.enrolledMethods()).length > 0;
      if (enrolled) throw new AppError('bearer_required', 'Bearer token required: this token was issued without a second factor; sign in again');
      if (!req.setupPath) throw new AppError('forbidden', NOT_ENROLLED);
    }
    if (req.route?.mfaVerified && !principal.mfaVerified && (await this.enrolled())) throw new AppError('bearer_required', MFA_TOKEN_REQUIRED);
    return { subject: principal.subject, via: 'bearer', mfaVerified: principal.mfaVerified, tokenId: principal.tokenId, authenticatedAt: principal.issuedAt };
  }

  private async enrolled(): Promise<boolean> {
    return (await this.deps.mfa.enrolledMethods()).length > 0;
  }

  /**
   * An API key: checked like a password (a lockout slot, an auth-log line when
   * it fails), then held to its scopes. It never reaches /auth/ endpoints.
   */
  private async apiKey(value: string, req: AdminRequest): Promise<AdminPrincipal> {
    const { lockout, apiKeys, authLog } = this.deps;
    let key: ApiKeyPrincipal | null = null;
    const { ok, attempt } = await lockout.guard(
      req.ip,
      async () => (key = await apiKeys.validate(value)) !== null,
      () => authLog.failure('api-key', req.ip),
    );
    if (!ok || key === null) throw unauthenticated('Invalid, expired or revoked API key');
    await attempt.passed();
    const found: ApiKeyPrincipal = key;
    const route = req.route;
    if (req.setupPath || route === undefined || route.mfaVerified || route.url.startsWith('/auth/')) {
      throw new AppError('forbidden', 'API keys cannot be used on /auth/ endpoints (MFA settings, API keys): sign in as the administrator');
    }
    const needed = scopeNeeded(route);
    const allowed = found.scopes.includes('admin') || found.scopes.includes(needed) || (needed === 'read' && route.scope !== undefined && found.scopes.includes(route.scope));
    if (!allowed) throw new AppError('forbidden', `This API key lacks the scope "${needed}" for ${route.method} ${route.url}`);
    return { subject: `api-key:${found.id}`, via: 'api_key', mfaVerified: false, tokenId: null, authenticatedAt: null, apiKey: { id: found.id, scopes: found.scopes } };
  }

  private async basic(value: string, req: AdminRequest): Promise<AdminPrincipal> {
    const { lockout, credentials, authLog } = this.deps;
    const creds = parseBasic(value);
    // The slot is reserved before the password is looked at (see Lockout).
    const { ok, attempt } = await lockout.guard(
      req.ip,
      async () => creds !== null && (await credentials.check(creds.user, creds.pass)),
      () => authLog.failure(creds?.user ?? '-', req.ip),
    );
    if (!ok) throw unauthenticated('Invalid credentials');
    // A successful Basic call gives the slot back but does not clear the failures.
    await attempt.passed();
    if (!this.deps.passwordAloneAllowed) {
      const enrolled = (await this.deps.mfa.enrolledMethods()).length > 0;
      if (enrolled) throw new AppError('bearer_required', 'Bearer token required');
      if (!req.setupPath) throw new AppError('forbidden', NOT_ENROLLED);
    }
    if (req.route?.mfaVerified && (await this.enrolled())) throw new AppError('bearer_required', MFA_TOKEN_REQUIRED);
    return { subject: credentials.username, via: 'basic', mfaVerified: false, tokenId: null, authenticatedAt: null };
  }
}
