/* This module's tables, as Kysely sees them: merged into Database (src/db/schema.ts). */

/** A DKIM key; `private_key` sealed (context `dkim_keys.<id>.private_key`). */
export type DkimKeyTable = {
  id: string;
  domain: string;
  selector: string;
  algorithm: string;
  bits: number;
  public_key: string;
  private_key: string;
  state: string;
  created_at: number;
  activated_at: number | null;
  retired_at: number | null;
};

/** A DKIM rotation in progress (one per domain): the step it stopped at. */
export type DkimRotationTable = {
  domain: string;
  step: string;
  new_selector: string;
  old_selector: string | null;
  wait_until: number | null;
  started_at: number;
  updated_at: number;
  last_error: string | null;
};

/** DNS provider sync settings of a domain; `api_token` sealed. */
export type DnsSyncTable = { domain: string; provider: string; zone_id: string; api_token: string; enabled: number; updated_at: number; last_sync_at: number | null };

/** The DANE keys of a mail host (`_25._tcp.<mail host> TLSA 3 1 1`): SPKI SHA-256 hex, and the key change in progress. */
export type DaneKeyTable = {
  mail_host: string;
  current_spki: string;
  next_spki: string | null;
  state: string;
  wait_until: number | null;
  created_at: number;
  updated_at: number;
  last_error: string | null;
};

export type DeliverabilityReportTable = { id: string; domain: string; created_at: number; failed: number; report_json: string };

declare module '../../db/schema.js' {
  interface Database {
    dkim_keys: DkimKeyTable;
    dkim_rotations: DkimRotationTable;
    dns_sync: DnsSyncTable;
    deliverability_reports: DeliverabilityReportTable;
    dane_keys: DaneKeyTable;
  }
}
