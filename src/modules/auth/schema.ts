import { Type } from '@sinclair/typebox';
import { AuthenticationCredential, MethodName } from '../mfa/index.js';

// Request objects refuse unknown fields: a 422 naming the field (additionalProperties false).
const strict = { additionalProperties: false } as const;
const Field = (max: number) => Type.String({ maxLength: max });

export const LoginBody = Type.Object({ username: Field(256), password: Field(1024) }, strict);
export const SmsSendBody = Type.Object({ challenge_id: Field(128) }, strict);
export const VerifyBody = Type.Object({ challenge_id: Field(128), method: MethodName, code: Field(32) }, strict);
export const PasskeyOptionsBody = Type.Object({ challenge_id: Field(128) }, strict);
export const PasskeyVerifyBody = Type.Object({ challenge_id: Field(128), credential: AuthenticationCredential }, strict);
export const PasskeyOptionsResponse = Type.Object(
  { challenge_id: Type.String(), expires_in: Type.Integer(), options: Type.Record(Type.String(), Type.Unknown(), { description: 'PublicKeyCredentialRequestOptions as JSON, for navigator.credentials.get()' }) },
  { title: 'PasskeyRequestOptions' },
);
export const LogoutBody = Type.Object({ access_token: Type.Optional(Field(512)) }, strict);

export const AccessTokenResponse = Type.Object(
  { access_token: Type.String(), token_type: Type.Literal('bearer'), expires_in: Type.Integer(), mfa_verified: Type.Boolean() },
  { title: 'AccessToken' },
);
export const ChallengeResponse = Type.Object(
  { mfa_required: Type.Literal(true), challenge_id: Type.String(), methods: Type.Array(MethodName), expires_in: Type.Integer() },
  { title: 'Challenge' },
);
export const SmsSendResponse = Type.Object(
  { ok: Type.Literal(true), method: Type.Literal('sms'), expires_in: Type.Integer(), phone_hint: Type.String() },
  { title: 'SmsSent' },
);
export const OkResponse = Type.Object({ ok: Type.Literal(true) });

