import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import type { AuthService } from './auth.service.js';
import type { AuthenticationResponseJSON } from '@simplewebauthn/server';
import { AccessTokenResponse, ChallengeResponse, LoginBody, LogoutBody, OkResponse, PasskeyOptionsBody, PasskeyOptionsResponse, PasskeyVerifyBody, SmsSendBody, SmsSendResponse, VerifyBody } from './schema.js';
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

  r.post('/auth/mfa/webauthn/options', {
    config: { audit: false },
    schema: {
      tags: ['auth'],
      summary: 'Ask for a passkey assertion for a pending challenge',
      description: 'For a challenge that offers `webauthn`: the options for navigator.credentials.get() (the registered passkeys, user verification as configured). The WebAuthn challenge is kept with the sign-in challenge and answers one assertion; asking again replaces it.',
      body: PasskeyOptionsBody,
      response: { 200: PasskeyOptionsResponse, ...errors(400, 401, 413, 422, 429) },
    },
    handler: (req) => auth.webauthnOptions(req.clientIp, req.body.challenge_id),
  });

  r.post('/auth/mfa/webauthn/verify', {
    config: { audit: false },
    schema: {
      tags: ['auth'],
      summary: 'Answer a challenge with a passkey assertion',
      description: 'Checks the assertion against the challenge\'s pending WebAuthn challenge (once), the configured origin and RP ID, user verification and the signature counter. A right one answers an access token earned with the second factor; anything else counts as a failed attempt for the client address.',
      body: PasskeyVerifyBody,
      response: { 200: AccessTokenResponse, ...errors(400, 401, 413, 422, 429) },
    },
    handler: (req) => auth.verifyWebauthn(req.clientIp, req.body.challenge_id, req.body.credential as unknown as AuthenticationResponseJSON),
  });

  r.post('/auth/passkey/options', {
    config: { audit: false, bodyOptional: true },
    schema: {
      tags: ['auth'],
      summary: 'Passwordless sign-in, step one: options for any passkey of this site',
      description: 'Only while passwordless sign-in is on (403 otherwise). A challenge of its own, for one assertion, with user verification required.',
      response: { 200: PasskeyOptionsResponse, ...errors(400, 403, 429) },
    },
    handler: (req) => auth.passwordlessOptions(req.clientIp),
  });

  r.post('/auth/passkey/verify', {
    config: { audit: false, retryAfter: true },
    schema: {
      tags: ['auth'],
      summary: 'Passwordless sign-in, step two: a discoverable passkey with user verification',
      description: 'A passkey of the administrator, verified by its authenticator (PIN or biometrics), answers an access token earned with the second factor. A failure counts in the lockout like a wrong password.',
      body: PasskeyVerifyBody,
      response: { 200: AccessTokenResponse, ...errors(400, 401, 403, 413, 422, 429) },
    },
    handler: (req) => auth.passwordlessVerify(req.clientIp, req.body.challenge_id, req.body.credential as unknown as AuthenticationResponseJSON),
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
