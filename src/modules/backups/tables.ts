export {};

/* This module's tables, as Kysely sees them: merged into Database (src/db/schema.ts). */

declare module '../../db/schema.js' {
  interface Database {
    /** Sealed backup secrets: the remote encryption key, remote credentials. */
    backup_secrets: { name: string; value: string; created_at: number; shown_at: number | null };
  }
}
