/* This module's tables, as Kysely sees them: merged into Database (src/db/schema.ts). */

export type AdminMfaTable = {
  id: number;
  totp_enabled: number;
  totp_secret: string | null;
  totp_confirmed_at: number | null;
  totp_last_step: number | null;
  sms_enabled: number;
  sms_phone: string | null;
  sms_provider: string | null;
  updated_at: number;
  /** The WebAuthn user handle (random, base64url), made at the first passkey. */
  webauthn_user_id: string | null;
  /** Stored passwordless switch (1/0); null: MAILSVC_WEBAUTHN_PASSWORDLESS. */
  passkey_passwordless: number | null;
  /** Stored passkey policy (no, panel, all); null: MAILSVC_WEBAUTHN_REQUIRED. */
  passkey_required: string | null;
};

/** One passkey (WebAuthn credential) of the administrator; the public key only, nothing secret. */
export type AdminPasskeyTable = {
  id: string;
  credential_hash: string;
  credential_id: string;
  public_key: string;
  counter: number;
  transports: string;
  backed_up: number;
  device_type: string;
  aaguid: string;
  name: string;
  created_at: number;
  last_used_at: number | null;
};

/** One row per recovery code: a keyed hash (HMAC-SHA256) of the code, never the code. */
export type RecoveryCodeTable = {
  id: string;
  code_hash: string;
  created_at: number;
  used_at: number | null;
};

declare module '../../db/schema.js' {
  interface Database {
    admin_mfa: AdminMfaTable;
    admin_recovery_codes: RecoveryCodeTable;
    admin_passkeys: AdminPasskeyTable;
  }
}
