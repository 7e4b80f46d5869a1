import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import type { AuthService } from './auth.service.js';
import { AccessTokenResponse, ChallengeResponse, LoginBody, LogoutBody, OkResponse, SmsSendBody, SmsSendResponse, VerifyBody } from './schema.js';
import type { RouteErrors } from '../route-types.js';

/** The four public /auth endpoints: no prior authentication (spec §Authentication rule 1). */
export function authRoutes(app: FastifyInstance, auth: AuthService, errors: RouteErrors): void {
  const r = app.withTypeProvider<TypeBoxTypeProvider>();

  r.post('/auth/login', {
    config: { retryAfter: true },
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
    schema: {
      tags: ['auth'],
      summary: 'Send an SMS code for a pending challenge',
      body: SmsSendBody,
      response: { 200: SmsSendResponse, ...errors(400, 401, 413, 422, 429, 502) },
    },
    handler: (req) => auth.sendSms(req.clientIp, req.body.challenge_id),
  });

  r.post('/auth/mfa/verify', {
    schema: {
      tags: ['auth'],
      summary: 'Answer a challenge with a TOTP code, an SMS code or a recovery code',
      body: VerifyBody,
      response: { 200: AccessTokenResponse, ...errors(400, 401, 413, 422, 429) },
    },
    handler: (req) => auth.verify(req.clientIp, req.body.challenge_id, req.body.method, req.body.code),
  });

  r.post('/auth/logout', {
    // The body is optional: no body is the same as an empty object.
    preValidation: async (req) => {
      req.body ??= {};
    },
    schema: {
      tags: ['auth'],
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
