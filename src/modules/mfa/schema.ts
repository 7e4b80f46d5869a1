import { Type } from '@sinclair/typebox';
import type { Static } from '@sinclair/typebox';

/** The second factors an administrator can enrol. */
export const FactorName = Type.Union([Type.Literal('totp'), Type.Literal('sms'), Type.Literal('webauthn')]);
export type Factor = Static<typeof FactorName>;
/** What a challenge can be answered with: a factor (a passkey is `webauthn`), or a recovery code of TOTP. */
export const MethodName = Type.Union([Type.Literal('totp'), Type.Literal('sms'), Type.Literal('recovery'), Type.Literal('webauthn')]);
export type Method = Static<typeof MethodName>;
export const METHODS: readonly Method[] = ['totp', 'sms', 'recovery', 'webauthn'];

const strict = { additionalProperties: false } as const;

export const MfaStatus = Type.Object(
  {
    totp_enabled: Type.Boolean(),
    totp_pending: Type.Boolean(),
    totp_confirmed_at: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
    sms_enabled: Type.Boolean(),
    sms_phone: Type.Union([Type.String(), Type.Null()]),
    sms_provider: Type.Union([Type.String(), Type.Null()]),
    methods: Type.Array(FactorName),
    mfa_required: Type.Boolean(),
    recovery_codes_remaining: Type.Integer({ description: 'unused recovery codes of TOTP' }),
    passkeys: Type.Integer({ description: 'registered passkeys (GET /auth/mfa/passkeys lists them)' }),
  },
  { title: 'MfaStatus' },
);

const RecoveryCodes = Type.Array(Type.String(), { description: 'shown once: ten single-use codes for when the authenticator is lost' });

export const TotpConfirmed = Type.Composite([MfaStatus, Type.Object({ recovery_codes: Type.Optional(RecoveryCodes) })], { title: 'TotpConfirmed' });

export const RecoveryCodesResponse = Type.Object(
  { recovery_codes: RecoveryCodes, recovery_codes_remaining: Type.Integer() },
  { title: 'RecoveryCodes' },
);

export const TotpEnrollment = Type.Object(
  { secret: Type.String(), provisioning_uri: Type.String(), issuer: Type.String() },
  { title: 'TotpEnrollment' },
);

export const TotpConfirmBody = Type.Object({ code: Type.String({ maxLength: 32 }) }, strict);

export const SmsConfigBody = Type.Object(
  {
    phone: Type.Optional(Type.String({ maxLength: 64 })),
    provider: Type.Optional(Type.String({ maxLength: 64 })),
    enabled: Type.Optional(Type.Boolean()),
  },
  strict,
);
