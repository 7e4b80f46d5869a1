import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { AppError } from '../../shared/errors.js';
import type { AuthService, TokenService } from '../auth/index.js';
import type { RouteErrors } from '../route-types.js';
import { clearSessionCookie, DEV_SESSION_COOKIE, readCookie, SESSION_COOKIE, setSessionCookie } from './cookies.js';
import type { PanelCallMarker } from './panel-call.js';
import { PANEL_CALL_HEADER, REAUTH_HEADER } from './panel-call.js';
import type { AuthenticationResponseJSON } from '@simplewebauthn/server';
import { LoginBody as PanelLoginBody, PasskeyVerifyBody, SmsSendBody as PanelSmsBody, VerifyBody as PanelVerifyBody } from '../auth/index.js';
import type { PanelSession, PanelSessionService } from './session.service.js';
import { registerStaticPanel } from './static-routes.js';

export type PanelRouteDeps = {
  auth: AuthService;
  tokens: Pick<TokenService, 'issue'>;
  /** Whether a second factor is enrolled. */
  enrolled: () => Promise<boolean>;
  username: string;
  /** Records the sign-out in the audit log, as the API's logout is. */
  recordLogout: (ip: string, tokenId: string) => Promise<void>;
  sessions: PanelSessionService;
  marker: PanelCallMarker;
  devHttp: boolean;
  panelDir: string;
};

const HIDDEN = { hide: true } as const;
/** Paths the proxy never forwards: the panel itself and the API's own documents. */
const NOT_PROXIED = /^\/(panel|docs|openapi\.json)(\/|$|\?)/;
const LOOPBACK = new Set(['127.0.0.1', '::1', '::ffff:127.0.0.1']);

declare module 'fastify' {
  interface FastifyRequest {
    panelSession?: PanelSession;
  }
}

/**
 * The web panel's routes: its static files, its session (sign-in, the
 * challenge, sign-out) and `/panel/api/*`, which forwards to the API with the
 * session's Bearer token. The session cookie is read here and nowhere else.
 */
export function panelRoutes(app: FastifyInstance, deps: PanelRouteDeps, errors: RouteErrors): void {
  const { auth, sessions, marker, devHttp } = deps;
  const cookieName = devHttp ? DEV_SESSION_COOKIE : SESSION_COOKIE;

  /** No state changes from another site, and the development cookie only from this host. */
  const sameOrigin = async (req: FastifyRequest): Promise<void> => {
    if (devHttp && !LOOPBACK.has(req.socket.remoteAddress ?? '')) {
      throw new AppError('forbidden', 'The panel runs with MAILSVC_PANEL_DEV_HTTP=yes and answers only loopback: turn it off and serve the panel behind TLS');
    }
    if (req.method === 'GET' || req.method === 'HEAD') return;
    const site = req.headers['sec-fetch-site'];
    if (site !== undefined && site !== 'same-origin') throw new AppError('forbidden', 'Cross-site request refused: use the panel itself');
    const origin = req.headers.origin;
    if (origin !== undefined && origin !== 'null' && !sameHost(origin, req.headers.host)) {
      throw new AppError('forbidden', 'Cross-site request refused: the Origin is not this host (behind a proxy, pass the Host header on)');
    }
    if (origin === 'null') throw new AppError('forbidden', 'Cross-site request refused: use the panel itself');
  };

  /** A live session, and for a state change its CSRF token in X-CSRF-Token. */
  const withSession = async (req: FastifyRequest): Promise<void> => {
    await sameOrigin(req);
    const session = await sessions.resume(readCookie(req, cookieName));
    if (!session) throw new AppError('unauthenticated', 'Not signed in to the panel, or the session ended: sign in again');
    if (req.method !== 'GET' && req.method !== 'HEAD' && !sessions.csrfMatches(session, headerOf(req, 'x-csrf-token'))) {
      throw new AppError('forbidden', 'CSRF token missing or wrong: reload the panel and try again');
    }
    req.panelSession = session;
  };

  const startSession = async (req: FastifyRequest, reply: FastifyReply, token: { access_token: string; expires_in: number }) => {
    const old = await sessions.resume(readCookie(req, cookieName));
    if (old) {
      await sessions.end(old);
      await auth.logout(old.token);
    }
    const { cookie, session } = await sessions.start(token.access_token, token.expires_in);
    setSessionCookie(reply, devHttp, cookie);
    return sessionView(session);
  };

  const r = app.withTypeProvider<TypeBoxTypeProvider>();
  const authErrors = errors(400, 401, 403, 413, 415, 422, 429, 502);

  r.post('/panel/session/login', { onRequest: sameOrigin, config: { retryAfter: true }, schema: { ...HIDDEN, body: PanelLoginBody, response: authErrors } }, async (req, reply) => {
    let answer;
    try {
      answer = await auth.login(req.clientIp, req.body.username, req.body.password, 'panel');
    } catch (err) {
      // Login refuses a right password only while MFA is required and no factor is enrolled yet. The API's
      // way to enrol then is Basic on the /auth/mfa setup paths; the panel's is a session whose token has
      // exactly those rights (the admin guard lets a token without a second factor reach the setup paths
      // only, and enrolling a factor revokes it).
      if (!(err instanceof AppError && err.code === 'forbidden' && (await deps.enrolled()) === false)) throw err;
      answer = await deps.tokens.issue(deps.username, false);
    }
    if ('challenge_id' in answer) return answer;
    return startSession(req, reply, answer);
  });

  r.post('/panel/session/sms', { onRequest: sameOrigin, schema: { ...HIDDEN, body: PanelSmsBody, response: authErrors } }, (req) => auth.sendSms(req.clientIp, req.body.challenge_id));

  r.post('/panel/session/verify', { onRequest: sameOrigin, config: { retryAfter: true }, schema: { ...HIDDEN, body: PanelVerifyBody, response: authErrors } }, async (req, reply) => {
    const token = await auth.verify(req.clientIp, req.body.challenge_id, req.body.method, req.body.code, 'panel');
    return startSession(req, reply, token);
  });
  // Passkeys: the second factor of a challenge, or (when turned on) the whole sign-in.
  r.post('/panel/session/webauthn/options', { onRequest: sameOrigin, schema: { ...HIDDEN, body: PanelSmsBody, response: authErrors } }, (req) => auth.webauthnOptions(req.clientIp, req.body.challenge_id));
  r.post('/panel/session/webauthn/verify', { onRequest: sameOrigin, config: { retryAfter: true }, schema: { ...HIDDEN, body: PasskeyVerifyBody, response: authErrors } }, async (req, reply) => {
    const token = await auth.verifyWebauthn(req.clientIp, req.body.challenge_id, req.body.credential as unknown as AuthenticationResponseJSON);
    return startSession(req, reply, token);
  });
  r.post('/panel/session/passkey/options', { onRequest: sameOrigin, config: { bodyOptional: true }, schema: { ...HIDDEN, response: authErrors } }, (req) => auth.passwordlessOptions(req.clientIp));
  r.post('/panel/session/passkey/verify', { onRequest: sameOrigin, config: { retryAfter: true }, schema: { ...HIDDEN, body: PasskeyVerifyBody, response: authErrors } }, async (req, reply) => {
    const token = await auth.passwordlessVerify(req.clientIp, req.body.challenge_id, req.body.credential as unknown as AuthenticationResponseJSON);
    return startSession(req, reply, token);
  });
  // Whether the sign-in page offers "Sign in with a passkey" (nothing secret: the switch only).
  r.get('/panel/session/options', { onRequest: sameOrigin, schema: HIDDEN }, async () => ({ passwordless: await auth.passwordlessAvailable() }));

  r.get('/panel/session', { onRequest: withSession, schema: HIDDEN }, (req) => sessionView(req.panelSession as PanelSession));

  r.post('/panel/session/logout', { onRequest: withSession, config: { bodyOptional: true }, schema: HIDDEN }, async (req, reply) => {
    const session = req.panelSession as PanelSession;
    await sessions.end(session);
    await auth.logout(session.token);
    clearSessionCookie(reply, devHttp);
    await deps.recordLogout(req.clientIp, session.token.split('.')[0] ?? '');
    return { ok: true };
  });

  // The schema an API route validates its body with, as the OpenAPI document states it (generated from the
  // route's own schema object): the panel builds its forms from it, so a form cannot drift from the validation.
  r.get('/panel/schema', {
    onRequest: withSession,
    schema: {
      ...HIDDEN,
      querystring: Type.Object({ method: Type.Union([Type.Literal('post'), Type.Literal('put'), Type.Literal('patch')]), path: Type.String({ pattern: '^/[A-Za-z0-9/{}_-]{0,200}$' }) }, { additionalProperties: false }),
      response: errors(401, 403, 404, 422),
    },
  }, (req) => {
    const doc = app.swagger() as { paths?: Record<string, Record<string, { requestBody?: { content?: Record<string, { schema?: unknown }> } } | undefined> | undefined> };
    const body = doc.paths?.[req.query.path]?.[req.query.method]?.requestBody?.content?.['application/json']?.schema;
    if (body === undefined) throw new AppError('not_found', `No ${req.query.method.toUpperCase()} ${req.query.path} with a JSON body in the API`);
    return { method: req.query.method, path: req.query.path, body };
  });

  // The panel's API calls: the same routes, hooks, lockout and audit as any API call, made in-process with the session's token.
  app.route({
    method: ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'],
    url: '/panel/api/*',
    onRequest: withSession,
    config: { bodyOptional: true },
    schema: HIDDEN,
    handler: async (req, reply) => {
      const session = req.panelSession as PanelSession;
      const target = req.url.slice('/panel/api'.length);
      if (!target.startsWith('/') || NOT_PROXIED.test(target)) throw new AppError('not_found', 'No such API path');
      const headers: Record<string, string> = {
        authorization: `Bearer ${session.token}`,
        accept: 'application/json',
        [PANEL_CALL_HEADER]: marker.header(sessions.isFresh(session)),
      };
      const forwarded = headerOf(req, 'x-forwarded-for');
      if (forwarded !== undefined) headers['x-forwarded-for'] = forwarded;
      const hasBody = req.body !== undefined && req.body !== null && !(req.method === 'GET' || req.method === 'HEAD');
      if (hasBody) headers['content-type'] = 'application/json';
      const res = await app.inject({
        method: req.method as 'GET',
        url: target,
        headers,
        remoteAddress: req.socket.remoteAddress ?? '127.0.0.1',
        ...(hasBody ? { payload: JSON.stringify(req.body) } : {}),
      });
      for (const name of ['content-type', 'retry-after', REAUTH_HEADER, 'location']) {
        const v = res.headers[name];
        if (typeof v === 'string') reply.header(name, v);
      }
      return reply.code(res.statusCode).send(res.rawPayload);
    },
  });

  registerStaticPanel(app, deps.panelDir);
}

function sessionView(s: PanelSession) {
  return {
    signed_in: true,
    csrf_token: s.csrf,
    expires_at: new Date(s.expiresAt).toISOString(),
    idle_until: new Date(s.idleUntil).toISOString(),
    fresh_until: new Date(s.freshUntil).toISOString(),
  };
}

function headerOf(req: FastifyRequest, name: string): string | undefined {
  const v = req.headers[name];
  return typeof v === 'string' ? v : undefined;
}

/** The Origin names this host (URL parsing drops a default port on both sides). */
function sameHost(origin: string, host: string | undefined): boolean {
  try {
    const o = new URL(origin);
    return host !== undefined && o.host === new URL(`${o.protocol}//${host}`).host;
  } catch {
    return false;
  }
}
