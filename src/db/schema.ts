import type { Generated } from 'kysely';

/** Booleans are 0/1 integers and times are epoch milliseconds on every dialect. */
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

export type SmsProviderTable = {
  code: string;
  enabled: number;
  base_url: string;
  client_id: string | null;
  client_secret: string | null;
  api_key: string | null;
  send_path: string;
  from_sender: string | null;
  route: string;
  label: string | null;
  updated_at: number;
};

export type AccessTokenTable = {
  id: string;
  secret_hash: string;
  subject: string;
  purpose: string;
  mfa_verified: number;
  created_at: number;
  expires_at: number;
  revoked_at: number | null;
};

export type SchemaVersionRow = { name: string; timestamp: string };

export type Database = {
  admin_mfa: AdminMfaTable;
  sms_providers: SmsProviderTable;
  access_tokens: AccessTokenTable;
  kysely_migration: SchemaVersionRow & { _?: Generated<number> };
};
