/* This module's tables, as Kysely sees them: merged into Database (src/db/schema.ts). */

/** A manual ban: the reason mailsvc keeps; fail2ban holds the ban itself. */
export type BanTable = { ip: string; reason: string; banned_by: string; banned_at: number };

declare module '../../db/schema.js' {
  interface Database {
    bans: BanTable;
  }
}
