/* This module's tables, as Kysely sees them: merged into Database (src/db/schema.ts). */

/** A run-time setting changed through PATCH /admin/settings (update channel, auto-updates). */
export type ServiceSettingTable = { key: string; value: string; updated_at: number };

declare module '../../db/schema.js' {
  interface Database {
    service_settings: ServiceSettingTable;
  }
}
