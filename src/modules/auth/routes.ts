import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import type { AuthService } from './auth.service.js';
import { AccessTokenResponse, ChallengeResponse, LoginBody, LogoutBody, OkResponse, SmsSendBody, SmsSendResponse, VerifyBody } from './schema.js';
import type { RouteErrors } from '../route-types.js';

/** The four public /auth endpoints: no prior authentication (docs/contract.md). */
export function authRoutes(app: FastifyInstance, auth: AuthService, errors: RouteErrors): void {
  const r = app.withTypeProvider<TypeBoxTypeProvider>();

  // Sign-in steps are not in the audit log: their failures belong to the auth log, which fail2ban reads.
  r.post('/auth/login', {
    config: { retryAfter: true, audit: false },
    schema: {
      tags: ['auth'],
      summary: 'Sign in with the administrator password',
      description: 'Returns an access token, or a challenge when a second factor is enrolled.',
      body: LoginBody,
      response: { 200: Type.Union([AccessTokenResponse, ChallengeResponse]), ...errors(400, 401, 403, 413, 422, 429) },
    },
    handler: (req) => auth.login(req.clientIp, req.body.username, req.body.password),
  });

  r.post('/auth/mfa/sms', {
    config: { audit: false },
    schema: {
      tags: ['auth'],
      description: 'Sends a six-digit code by SMS to the administrator\'s phone for the challenge that /auth/login returned. Sends are limited per address and per phone number; a provider failure is 502.',
      summary: 'Send an SMS code for a pending challenge',
      body: SmsSendBody,
      response: { 200: SmsSendResponse, ...errors(400, 401, 413, 422, 429, 502) },
    },
    handler: (req) => auth.sendSms(req.clientIp, req.body.challenge_id),
  });

  r.post('/auth/mfa/verify', {
    config: { audit: false },
    schema: {
      tags: ['auth'],
      description: 'Completes a login challenge. A right code answers an access token earned with the second factor; a wrong one counts as a failed attempt for the client address.',
      summary: 'Answer a challenge with a TOTP code, an SMS code or a recovery code',
      body: VerifyBody,
      response: { 200: AccessTokenResponse, ...errors(400, 401, 413, 422, 429) },
    },
    handler: (req) => auth.verify(req.clientIp, req.body.challenge_id, req.body.method, req.body.code),
  });

  r.post('/auth/logout', {
    // The body is optional: no body is the same as an empty object.
    // Recorded with the owner of the token it ends, whatever credentials came with it.
    config: { bodyOptional: true, audit: 'token-owner' },
    schema: {
      tags: ['auth'],
      description: 'Revokes the token given in the body (`access_token`) or, without a body, the Bearer token of the request, on every instance. Always answers 200, so it cannot be used to test tokens.',
      summary: 'Revoke an access token (body field, else the Bearer header)',
      body: LogoutBody,
      response: { 200: OkResponse, ...errors(400, 413, 422) },
    },
    handler: (req) => {
      const header = req.headers.authorization ?? '';
      const bearer = /^bearer\s+(.+)$/i.exec(header)?.[1]?.trim();
      return auth.logout(req.body.access_token ?? bearer);
    },
  });
}
