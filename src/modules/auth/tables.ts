/* This module's tables, as Kysely sees them: merged into Database (src/db/schema.ts). */

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

declare module '../../db/schema.js' {
  interface Database {
    access_tokens: AccessTokenTable;
    /** The administrator identity the service last started with (docs/auth.md). */
    admin_fingerprint: { id: number; fingerprint: string; updated_at: number };
    /** Raised by every revocation of access tokens (one row, id 1): the instances' token caches read it. */
    token_generation: { id: number; value: number };
  }
}
