import { Type } from '@sinclair/typebox';

const strict = { additionalProperties: false } as const;

export const Passkey = Type.Object(
  {
    id: Type.String(),
    name: Type.String(),
    created_at: Type.String({ format: 'date-time' }),
    last_used_at: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
    transports: Type.Array(Type.String(), { description: 'how the browser reaches the authenticator: internal, usb, nfc, ble, hybrid …' }),
    backed_up: Type.Boolean({ description: 'the credential is backed up (synced to other devices by its provider)' }),
    device_type: Type.Union([Type.Literal('single_device'), Type.Literal('multi_device')], { description: 'multi_device: may be synced; single_device: bound to the authenticator' }),
  },
  { title: 'Passkey' },
);

export const PasskeyList = Type.Object({ items: Type.Array(Passkey), total: Type.Integer() }, { title: 'PasskeyList' });

const Requirement = Type.Union([Type.Literal('no'), Type.Literal('panel'), Type.Literal('all')]);
const Source = Type.Union([Type.Literal('stored'), Type.Literal('default')]);

export const PasskeyPolicy = Type.Object(
  {
    passwordless: Type.Boolean({ description: 'a passkey with user verification alone signs in (no password)' }),
    passwordless_source: Source,
    required: Type.Union([Type.Literal('no'), Type.Literal('panel'), Type.Literal('all')], { description: 'no; panel: TOTP, SMS and recovery codes are refused in the panel; all: also for API sign-in' }),
    required_source: Source,
    configured: Type.Boolean({ description: 'MAILSVC_PANEL_ORIGIN is set: passkeys can be used' }),
    origin: Type.Union([Type.String(), Type.Null()]),
    rp_id: Type.Union([Type.String(), Type.Null()]),
    user_verification: Type.String(),
    attestation: Type.Literal('none'),
  },
  { title: 'PasskeyPolicy' },
);

export const PasskeyPolicyPatch = Type.Object(
  { passwordless: Type.Optional(Type.Boolean()), required: Type.Optional(Requirement) },
  { ...strict, minProperties: 1, title: 'PasskeyPolicyPatch' },
);

/** A browser's answer (PublicKeyCredential as JSON): checked by the WebAuthn library, bounded here. */
const B64 = (max: number) => Type.String({ maxLength: max, pattern: '^[A-Za-z0-9_-]*={0,2}$' });
const Extensions = Type.Record(Type.String({ maxLength: 64 }), Type.Unknown(), { maxProperties: 16 });
/** The fields every PublicKeyCredential has; `response` differs between registration and sign-in. */
const credentialFields = () => ({
  id: B64(1400),
  rawId: B64(1400),
  type: Type.Literal('public-key'),
  authenticatorAttachment: Type.Optional(Type.Union([Type.Literal('platform'), Type.Literal('cross-platform')])),
  clientExtensionResults: Extensions,
});

export const RegistrationCredential = Type.Object(
  {
    ...credentialFields(),
    response: Type.Object(
      {
        clientDataJSON: B64(8192),
        attestationObject: B64(65536),
        authenticatorData: Type.Optional(B64(65536)),
        transports: Type.Optional(Type.Array(Type.String({ maxLength: 32 }), { maxItems: 16 })),
        publicKeyAlgorithm: Type.Optional(Type.Integer()),
        publicKey: Type.Optional(B64(8192)),
      },
      strict,
    ),
  },
  strict,
);

export const AuthenticationCredential = Type.Object(
  {
    ...credentialFields(),
    response: Type.Object(
      {
        clientDataJSON: B64(8192),
        authenticatorData: B64(65536),
        signature: B64(8192),
        userHandle: Type.Optional(B64(1024)),
      },
      strict,
    ),
  },
  strict,
);

export const RegisterBody = Type.Object(
  { registration_id: Type.String({ maxLength: 128 }), name: Type.String({ minLength: 1, maxLength: 64 }), credential: RegistrationCredential },
  strict,
);
export const RenameBody = Type.Object({ name: Type.String({ minLength: 1, maxLength: 64 }) }, strict);

/** The options for navigator.credentials.create/get, as JSON (the WebAuthn Level 3 shapes). */
export const CreationOptions = Type.Object(
  { registration_id: Type.String(), expires_in: Type.Integer(), options: Type.Record(Type.String(), Type.Unknown()) },
  { title: 'PasskeyRegistrationOptions' },
);
