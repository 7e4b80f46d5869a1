import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { ADMIN_SECURITY as security } from '../route-types.js';
import type { AdminHooks, RouteErrors } from '../route-types.js';
import type { MfaService } from './mfa.service.js';
import { MfaStatus, RecoveryCodesResponse, SmsConfigBody, TotpConfirmBody, TotpConfirmed, TotpEnrollment } from './schema.js';


/** The MFA setup paths: administrator only, open to Basic while MFA is not enrolled. */
export function mfaRoutes(app: FastifyInstance, mfa: MfaService, hooks: AdminHooks, errors: RouteErrors): void {
  const r = app.withTypeProvider<TypeBoxTypeProvider>();
  const common = errors(401, 403, 429);

  r.get('/auth/mfa', {
    onRequest: hooks.setup,
    schema: { tags: ['mfa'], description: 'Says which second factors are enrolled (TOTP, SMS), the SMS phone and provider, how many recovery codes are left, and whether MFA is required.', summary: 'MFA status of the administrator', security, response: { 200: MfaStatus, ...common } },
    handler: () => mfa.status(),
  });

  r.post('/auth/mfa/totp/enroll', {
    onRequest: hooks.setup,
    schema: {
      tags: ['mfa'],
      description: 'Starts TOTP enrolment: returns a new secret and its otpauth URI, once. Nothing changes until /auth/mfa/totp/confirm accepts a code for it.',
      summary: 'Start TOTP enrolment: returns the secret once',
      security,
      response: { 200: TotpEnrollment, ...common, ...errors(409) },
    },
    handler: (req) => mfa.enrollTotp(req.admin?.subject ?? ''),
  });

  r.post('/auth/mfa/totp/confirm', {
    onRequest: hooks.setup,
    schema: {
      tags: ['mfa'],
      summary: 'Confirm TOTP enrolment with a current code',
      description: 'When this enables TOTP, the answer carries ten recovery codes, once; tokens issued without a second factor are revoked.',
      security,
      body: TotpConfirmBody,
      response: { 200: TotpConfirmed, ...common, ...errors(400, 413, 422) },
    },
    handler: (req) => mfa.confirmTotp(req.body.code),
  });

  r.delete('/auth/mfa/totp', {
    onRequest: hooks.setup,
    config: { reauth: 'every-client' },
    schema: { tags: ['mfa'], description: 'Turns TOTP off and erases its secret. Needs a token earned with the second factor.', summary: 'Disable TOTP and erase its secret', security, response: { 200: MfaStatus, ...common } },
    handler: () => mfa.deleteTotp(),
  });

  r.post('/auth/mfa/recovery-codes', {
    onRequest: hooks.setup,
    // Once TOTP is on, only a token earned with the second factor may make new codes.
    config: { mfaVerified: true },
    schema: {
      tags: ['mfa'],
      description: 'Replaces the recovery codes with ten new ones, shown in this answer only; the old ones stop working at once.',
      summary: 'Make a new set of ten recovery codes (shown once); the old set stops working',
      security: [{ bearer: [] }],
      response: { 200: RecoveryCodesResponse, ...common, ...errors(400) },
    },
    handler: () => mfa.regenerateRecoveryCodes(),
  });

  r.patch('/auth/mfa/sms', {
    onRequest: hooks.setup,
    // It can turn the SMS factor off or move it to another phone.
    config: { reauth: 'every-client' },
    schema: {
      tags: ['mfa'],
      description: 'Changes the SMS second factor: phone number (E.164), provider and the on/off switch, checked together and stored all or nothing.',
      summary: 'Change the SMS OTP phone, provider and switch (in that order, all or nothing)',
      security,
      body: SmsConfigBody,
      response: { 200: MfaStatus, ...common, ...errors(400, 413, 422) },
    },
    handler: (req) => mfa.patchSms(req.body),
  });
}
