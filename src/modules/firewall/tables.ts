/* This module's tables, as Kysely sees them: merged into Database (src/db/schema.ts). */

/** The one row (id 1) of firewall settings; `pending_*`/`previous_*` while a forced ruleset awaits confirmation. */
export type FirewallSettingsTable = {
  id: number;
  enabled: string;
  rules_json: string;
  updated_at: number;
  pending_id: string | null;
  pending_deadline: number | null;
  previous_enabled: string | null;
  previous_rules_json: string | null;
};

declare module '../../db/schema.js' {
  interface Database {
    firewall_settings: FirewallSettingsTable;
  }
}
