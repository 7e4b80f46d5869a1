import type { Generated } from 'kysely';
import type { SendRateField } from '../../shared/send-rate.js';

/* This module's tables, as Kysely sees them: merged into Database (src/db/schema.ts). */

export type AccountTable = {
  id: Generated<number>;
  domain_id: number;
  local_part: string;
  address: string;
  display_name: string;
  /** Dovecot-compatible `{ARGON2ID}$argon2id$…` */
  password_hash: string;
  quota_bytes: number;
  active: number;
  require_app_password: number;
  created_at: number;
  updated_at: number;
} & Record<SendRateField, number>;

declare module '../../db/schema.js' {
  interface Database {
    accounts: AccountTable;
  }
}
