/* This module's tables, as Kysely sees them: merged into Database (src/db/schema.ts). */

/** A limit changed at run time: the canonical number as text (scores may have decimals). */
export type LimitTable = { key: string; value: string; updated_at: number };

declare module '../../db/schema.js' {
  interface Database {
    limits: LimitTable;
  }
}
