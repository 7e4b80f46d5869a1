import type { Generated } from 'kysely';

/** A note an administrator keeps about a domain. Times are epoch milliseconds, as in every table. */
export type NoteTable = { id: Generated<number>; domain_id: number; text: string; created_at: number };

// The module's tables join Kysely's Database here, beside the module: no line in src/db/schema.ts.
declare module '../../db/schema.js' {
  interface Database {
    domain_notes: NoteTable;
  }
}
