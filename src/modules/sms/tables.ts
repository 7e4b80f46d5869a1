/* This module's tables, as Kysely sees them: merged into Database (src/db/schema.ts). */

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

declare module '../../db/schema.js' {
  interface Database {
    sms_providers: SmsProviderTable;
  }
}
