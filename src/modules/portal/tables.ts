/* This module's tables, as Kysely sees them: merged into Database (src/db/schema.ts). Times in ms. */

export type PortalSessionTable = { id_hash: string; account_id: number; created_at: number; last_seen_at: number; expires_at: number };
export type PortalTotpTable = { account_id: number; secret_sealed: string; confirmed: number; last_step: number; created_at: number };
/** `rules`: SieveRules as JSON. */
export type PortalMailRulesTable = { account_id: number; rules: string; updated_at: number };
export type PortalDisabledTable = { kind: 'domain' | 'mailbox'; name: string; created_at: number };

declare module '../../db/schema.js' {
  interface Database {
    portal_sessions: PortalSessionTable;
    portal_totp: PortalTotpTable;
    portal_mail_rules: PortalMailRulesTable;
    portal_disabled: PortalDisabledTable;
  }
}
