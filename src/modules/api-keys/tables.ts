/* This module's tables, as Kysely sees them: merged into Database (src/db/schema.ts). */

/** API keys `<id>.<secret>`: a SHA-256 of the secret; scopes comma-separated. */
export type ApiKeyTable = {
  id: string;
  name: string;
  secret_hash: string;
  scopes: string;
  created_by: string;
  created_at: number;
  expires_at: number;
  revoked_at: number | null;
};

declare module '../../db/schema.js' {
  interface Database {
    api_keys: ApiKeyTable;
  }
}
