/* This module's tables, as Kysely sees them: merged into Database (src/db/schema.ts). */

export type AppPasswordTable = {
  id: string;
  account_id: number;
  name: string;
  secret_hash: string;
  created_at: number;
  expires_at: number | null;
  last_used_at: number | null;
  last_used_ip: string | null;
  revoked_at: number | null;
};

declare module '../../db/schema.js' {
  interface Database {
    mailbox_app_passwords: AppPasswordTable;
  }
}
