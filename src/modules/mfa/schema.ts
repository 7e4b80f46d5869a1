import { Type } from '@sinclair/typebox';
import type { Static } from '@sinclair/typebox';

/** The second-factor methods a challenge can offer. */
export const MethodName = Type.Union([Type.Literal('totp'), Type.Literal('sms')]);
export type Method = Static<typeof MethodName>;
export const METHODS: readonly Method[] = ['totp', 'sms'];

const strict = { additionalProperties: false } as const;

export const MfaStatus = Type.Object(
  {
    totp_enabled: Type.Boolean(),
    totp_pending: Type.Boolean(),
    totp_confirmed_at: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
    sms_enabled: Type.Boolean(),
    sms_phone: Type.Union([Type.String(), Type.Null()]),
    sms_provider: Type.Union([Type.String(), Type.Null()]),
    methods: Type.Array(MethodName),
    mfa_required: Type.Boolean(),
  },
  { title: 'MfaStatus' },
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
