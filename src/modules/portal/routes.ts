import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { AppError } from '../../shared/errors.js';
import { AppPasswordCreatedSchema, AppPasswordSchema } from '../app-passwords/index.js';
import type { RouteErrors } from '../route-types.js';
import { CSRF_HEADER, readPortalCookie, setPortalCookie } from './portal-session.js';
import type { PortalSession, PortalSessions } from './portal-session.js';
import type { Caller, PortalService } from './portal.service.js';
import { registerPortalPage } from './page.js';
import {
  AppIdParam, CodeBody, ForwardingSchema, OverviewView, PasswordBody, PortalAppPasswordBody, ProfileBody, SessionView, SignInBody, TotpStart, UsageView, VacationBody, VacationSchema,
} from './schema.js';

declare module 'fastify' {
  interface FastifyRequest {
    portalSession?: PortalSession;
  }
}

const LOOPBACK = new Set(['127.0.0.1', '::1', '::ffff:127.0.0.1']);
const isRead = (req: FastifyRequest): boolean => req.method === 'GET' || req.method === 'HEAD';

/** The Origin names this host (URL parsing drops a default port on both sides). */
function sameHost(origin: string, host: string | undefined): boolean {
  try {
    const o = new URL(origin);
    return host !== undefined && o.host === new URL(`${o.protocol}//${host}`).host;
  } catch {
    return false;
  }
}

/**
 * The mailbox self-service portal: its page under /portal/ and its API under
 * /portal/api/. A session is a mailbox; no route takes a mailbox's name or
 * id, so a user can only ever reach the session's own mailbox.
 */
export function portalRoutes(app: FastifyInstance, deps: { service: PortalService; sessions: PortalSessions; devHttp: boolean }, errors: RouteErrors): void {
  const { service, sessions, devHttp } = deps;
  const r = app.withTypeProvider<TypeBoxTypeProvider>();
  const tags = ['portal'];
  registerPortalPage(app);

  /** No state change from another site; the development cookie only from this host. */
  const sameOrigin = async (req: FastifyRequest): Promise<void> => {
    if (devHttp && !LOOPBACK.has(req.socket.remoteAddress ?? '')) {
      throw new AppError('forbidden', 'The portal runs with MAILSVC_PANEL_DEV_HTTP=yes and answers only loopback: turn it off and serve it behind TLS');
    }
    if (isRead(req)) return;
    const site = req.headers['sec-fetch-site'];
    if (site !== undefined && site !== 'same-origin') throw new AppError('forbidden', 'Cross-site request refused: use the portal itself');
    const origin = req.headers.origin;
    if (origin !== undefined && !sameHost(origin, req.headers.host)) throw new AppError('forbidden', 'Cross-site request refused: the Origin is not this host');
  };
  /** A live portal session, and for a change its CSRF token in X-Portal-CSRF. */
  const onRequest = async (req: FastifyRequest): Promise<void> => {
    await sameOrigin(req);
    const session = await sessions.resume(readPortalCookie(req, devHttp));
    if (!session) throw new AppError('unauthenticated', 'Not signed in to the portal, or the session ended: sign in again');
    if (!isRead(req) && !sessions.csrfMatches(session, req.headers[CSRF_HEADER])) {
      throw new AppError('forbidden', 'CSRF token missing or wrong: reload the portal and try again');
    }
    req.portalSession = session;
  };
  const caller = (req: FastifyRequest): Caller => {
    if (!req.portalSession) throw new AppError('unauthenticated', 'Not signed in to the portal');
    return { session: req.portalSession, ip: req.clientIp };
  };
  const audit = false as const;
  const present = (address: string, s: PortalSession) => ({ address, csrf: s.csrf, expires_at: new Date(s.expiresAt).toISOString() });

  r.post('/portal/api/session', {
    onRequest: sameOrigin,
    config: { audit, retryAfter: true },
    schema: {
      tags, summary: 'Sign in to the portal with the mailbox password',
      description: 'Signs a mailbox user in with the mailbox password (never an app password, never the administrator\'s credentials) and, when the mailbox has TOTP on, its code. Sets the portal\'s own session cookie; failures are counted per client address and per mailbox address, and written to the auth log for fail2ban (mailsvc-portal).',
      body: SignInBody, response: { 200: SessionView, ...errors(401, 403, 429) },
    },
    handler: async (req, reply) => {
      const old = await sessions.resume(readPortalCookie(req, devHttp));
      if (old) await sessions.end(old);
      const { cookie, session, address } = await service.signIn(req.body, req.clientIp);
      setPortalCookie(reply, devHttp, cookie);
      return present(address, session);
    },
  });
  r.get('/portal/api/session', {
    onRequest, config: { audit },
    schema: { tags, summary: 'The portal session: who is signed in, and its CSRF token', description: 'Answers the signed-in mailbox and the CSRF token its changes must carry; 401 when there is no live session.', response: { 200: SessionView, ...errors(401, 403) } },
    handler: async (req) => present((await service.overview(caller(req))).address, caller(req).session),
  });
  r.delete('/portal/api/session', {
    onRequest, config: { audit },
    schema: { tags, summary: 'Sign out of the portal', description: 'Ends the portal session server-side and clears its cookie.', response: { 204: Type.Null(), ...errors(401, 403) } },
    handler: async (req, reply) => {
      await service.signOut(caller(req));
      setPortalCookie(reply, devHttp, null);
      return reply.status(204).send(null);
    },
  });
  r.get('/portal/api/me', {
    onRequest, config: { audit },
    schema: { tags, summary: 'The signed-in mailbox', description: 'The mailbox\'s address, name, quota limit and whether TOTP and device profiles are on.', response: { 200: OverviewView, ...errors(401, 403) } },
    handler: (req) => service.overview(caller(req)),
  });
  r.get('/portal/api/usage', {
    onRequest, config: { audit },
    schema: { tags, summary: 'The mailbox\'s usage and quota, as Dovecot counts them', description: 'Storage and messages used and their limits, from doveadm quota get through the privileged helper.', response: { 200: UsageView, ...errors(401, 403, 502, 503) } },
    handler: (req) => service.usage(caller(req)),
  });
  r.post('/portal/api/password', {
    onRequest, config: { audit },
    schema: {
      tags, summary: 'Change the mailbox password',
      description: 'Checks the current password and the new one against the same policy the administrator\'s account changes apply, stores it as Dovecot reads it, ends the mailbox\'s open IMAP/POP sessions and its other portal sessions. A wrong current password counts in the sign-in lockouts and is written to the auth log; the third wrong answer (password or TOTP code) in one session ends it (401).',
      body: PasswordBody, response: { 204: Type.Null(), ...errors(400, 401, 403, 422, 429) },
    },
    handler: async (req, reply) => {
      await service.changePassword(caller(req), req.body);
      return reply.status(204).send(null);
    },
  });
  r.get('/portal/api/app-passwords', {
    onRequest, config: { audit },
    schema: { tags, summary: 'The mailbox\'s app passwords (never the secret)', description: 'Each app password of the signed-in mailbox with its name, expiry and last use.', response: { 200: Type.Array(AppPasswordSchema), ...errors(401, 403) } },
    handler: (req) => service.listAppPasswords(caller(req)),
  });
  r.post('/portal/api/app-passwords', {
    onRequest, config: { audit },
    schema: { tags, summary: 'Create an app password: shown in this answer only', description: 'Creates a password for one mail client of the signed-in mailbox, with a name and an optional expiry. Only a keyed hash is stored.', body: PortalAppPasswordBody, response: { 201: AppPasswordCreatedSchema, ...errors(400, 401, 403, 409, 422, 429) } },
    handler: async (req, reply) => reply.status(201).send(await service.createAppPassword(caller(req), req.body)),
  });
  r.delete('/portal/api/app-passwords/:appId', {
    onRequest, config: { audit },
    schema: { tags, summary: 'Revoke an app password', description: 'Revokes one app password of the signed-in mailbox and ends its open IMAP/POP sessions; another mailbox\'s app password is not found.', params: AppIdParam, response: { 204: Type.Null(), ...errors(401, 403, 404, 422) } },
    handler: async (req, reply) => {
      await service.revokeAppPassword(caller(req), req.params.appId);
      return reply.status(204).send(null);
    },
  });
  r.post('/portal/api/device-profile', {
    onRequest, config: { audit, bodyOptional: true },
    schema: {
      tags, summary: 'A configuration profile for a device (Apple .mobileconfig)',
      description: 'The mailbox\'s IMAP and SMTP settings as a configuration profile; with app_password_name, a fresh app password of that name is made and put inside (it is in this file only).',
      body: ProfileBody, response: { 200: Type.String({ description: 'application/x-apple-aspen-config' }), ...errors(400, 401, 403, 404, 409, 422, 429) },
    },
    handler: async (req, reply) => {
      const { file, filename } = await service.deviceProfile(caller(req), req.body);
      return reply.header('content-type', 'application/x-apple-aspen-config').header('content-disposition', `attachment; filename="${filename}"`).send(file);
    },
  });
  r.get('/portal/api/forwarding', {
    onRequest, config: { audit },
    schema: { tags, summary: 'The mailbox\'s forwarding', description: 'Where the mailbox forwards its mail (a Sieve redirect), and whether it keeps a copy.', response: { 200: ForwardingSchema, ...errors(401, 403) } },
    handler: (req) => service.forwarding(caller(req)),
  });
  r.put('/portal/api/forwarding', {
    onRequest, config: { audit },
    schema: {
      tags, summary: 'Set or clear the forwarding', description: 'Forwards every message to one address, keeping a copy or not, through the mailbox\'s Sieve script in Dovecot (never a Postfix alias); to null ends it.',
      body: ForwardingSchema, response: { 200: ForwardingSchema, ...errors(400, 401, 403, 422, 502, 503) },
    },
    handler: (req) => service.setForwarding(caller(req), req.body),
  });
  r.get('/portal/api/vacation', {
    onRequest, config: { audit },
    schema: { tags, summary: 'The mailbox\'s out-of-office reply', description: 'The out-of-office reply: whether it is on, its text, its dates and how often a sender gets it.', response: { 200: VacationSchema, ...errors(401, 403) } },
    handler: (req) => service.vacation(caller(req)),
  });
  r.put('/portal/api/vacation', {
    onRequest, config: { audit },
    schema: {
      tags, summary: 'Set or switch off the out-of-office reply', description: 'An automatic reply between two dates (each optional), sent once per sender per `days`, through the mailbox\'s Sieve script (Pigeonhole vacation).',
      body: VacationBody, response: { 200: VacationSchema, ...errors(400, 401, 403, 422, 502, 503) },
    },
    handler: (req) => service.setVacation(caller(req), { ...req.body, start: req.body.start ?? null, end: req.body.end ?? null }),
  });
  r.post('/portal/api/totp', {
    onRequest, config: { audit, bodyOptional: true },
    schema: { tags, summary: 'Start TOTP enrolment for the mailbox', description: 'Makes a new TOTP secret for the signed-in mailbox; it counts at sign-in once confirmed with a first code.', response: { 200: TotpStart, ...errors(401, 403, 409) } },
    handler: (req) => service.startTotp(caller(req)),
  });
  r.post('/portal/api/totp/confirm', {
    onRequest, config: { audit },
    schema: { tags, summary: 'Confirm TOTP enrolment with a first code', description: 'Turns TOTP on for the mailbox\'s portal sign-in once a valid code is given.', body: CodeBody, response: { 204: Type.Null(), ...errors(400, 401, 403, 409, 422, 429) } },
    handler: async (req, reply) => {
      await service.confirmTotp(caller(req), req.body.code);
      return reply.status(204).send(null);
    },
  });
  r.post('/portal/api/totp/disable', {
    onRequest, config: { audit },
    schema: { tags, summary: 'Switch TOTP off (needs a current code)', description: 'Removes the mailbox\'s TOTP after checking a current code.', body: CodeBody, response: { 204: Type.Null(), ...errors(400, 401, 403, 409, 422, 429) } },
    handler: async (req, reply) => {
      await service.disableTotp(caller(req), req.body.code);
      return reply.status(204).send(null);
    },
  });
}
