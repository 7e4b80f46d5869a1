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
  }
}
