/* This module's tables, as Kysely sees them: merged into Database (src/db/schema.ts). */

/** A web-panel session: the cookie's id is kept only as its SHA-256; times in ms. */
export type PanelSessionTable = {
  id_hash: string;
  token_sealed: string;
  created_at: number;
  last_seen_at: number;
  expires_at: number;
  fresh_until: number;
};

declare module '../../db/schema.js' {
  interface Database {
    panel_sessions: PanelSessionTable;
  }
}
