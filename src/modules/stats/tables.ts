/* This module's tables, as Kysely sees them: merged into Database (src/db/schema.ts). */

/** One message as one mailbox saw it: nothing else (no subject, no remote address). */
export type StatsMessageTable = { msg_key: string; mailbox: string; direction: string; size: number; at: number };

declare module '../../db/schema.js' {
  interface Database {
    stats_messages: StatsMessageTable;
    stats_collector: { id: number; state_json: string; updated_at: number };
  }
}
