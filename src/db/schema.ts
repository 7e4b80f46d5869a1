import type { Generated } from 'kysely';
import type { SendRateField } from '../shared/send-rate.js';

/** Booleans are 0/1 integers and times are epoch milliseconds on every dialect. */
export type AdminMfaTable = {
  id: number;
  totp_enabled: number;
  totp_secret: string | null;
  totp_confirmed_at: number | null;
  totp_last_step: number | null;
  sms_enabled: number;
  sms_phone: string | null;
  sms_provider: string | null;
  updated_at: number;
};

export type SmsProviderTable = {
  code: string;
  enabled: number;
  base_url: string;
  client_id: string | null;
  client_secret: string | null;
  api_key: string | null;
  send_path: string;
  from_sender: string | null;
  route: string;
  label: string | null;
  updated_at: number;
};

export type AccessTokenTable = {
  id: string;
  secret_hash: string;
  subject: string;
  purpose: string;
  mfa_verified: number;
  created_at: number;
  expires_at: number;
  revoked_at: number | null;
};

export type DomainTable = {
  id: Generated<number>;
  name: string;
  active: number;
  created_at: number;
  updated_at: number;
};

export type AccountTable = {
  id: Generated<number>;
  domain_id: number;
  local_part: string;
  address: string;
  display_name: string;
  /** Dovecot-compatible `{ARGON2ID}$argon2id$…` */
  password_hash: string;
  quota_bytes: number;
  active: number;
  require_app_password: number;
  created_at: number;
  updated_at: number;
} & Record<SendRateField, number>;

export type AliasTable = {
  id: Generated<number>;
  domain_id: number;
  source: string;
  /** Comma-separated addresses, as Postfix's virtual_alias_maps returns them. */
  destination: string;
  active: number;
  created_at: number;
  updated_at: number;
};

export type AppPasswordTable = {
  id: string;
  account_id: number;
  name: string;
  secret_hash: string;
  created_at: number;
  expires_at: number | null;
  last_used_at: number | null;
  last_used_ip: string | null;
  revoked_at: number | null;
};

export type AuditLogTable = {
  id: Generated<number>;
  at: number;
  /** The admin username, or the OS user on the host CLI. */
  actor: string;
  token_id: string | null;
  /** The client address, or `cli`. */
  source: string;
  action: string;
  target: string | null;
  /** JSON object of scalar fields, secrets redacted. */
  summary: string;
  /** `ok` or an error code. */
  result: string;
};

export type JobTable = {
  id: string;
  kind: string;
  state: 'queued' | 'running' | 'succeeded' | 'failed';
  progress: number;
  message: string;
  /** JSON */
  input: string;
  /** JSON, once succeeded */
  result: string | null;
  error: string | null;
  owner: string | null;
  heartbeat_at: number | null;
  created_at: number;
  started_at: number | null;
  finished_at: number | null;
};

/** One row per recovery code: a keyed hash (HMAC-SHA256) of the code, never the code. */
export type RecoveryCodeTable = {
  id: string;
  code_hash: string;
  created_at: number;
  used_at: number | null;
};

/** API keys `<id>.<secret>`: a SHA-256 of the secret; scopes comma-separated. */
export type ApiKeyTable = {
  id: string;
  name: string;
  secret_hash: string;
  scopes: string;
  created_by: string;
  created_at: number;
  expires_at: number;
  revoked_at: number | null;
};

/** A limit changed at run time: the canonical number as text (scores may have decimals). */
export type LimitTable = { key: string; value: string; updated_at: number };
/** A manual ban: the reason mailsvc keeps; fail2ban holds the ban itself. */
export type BanTable = { ip: string; reason: string; banned_by: string; banned_at: number };

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

/** A run-time setting changed through PATCH /admin/settings (update channel, auto-updates). */
export type ServiceSettingTable = { key: string; value: string; updated_at: number };
/** One message as one mailbox saw it: nothing else (no subject, no remote address). */
export type StatsMessageTable = { msg_key: string; mailbox: string; direction: string; size: number; at: number };
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
export type DeliverabilityReportTable = { id: string; domain: string; created_at: number; failed: number; report_json: string };

/**
 * Every table, as Kysely sees it. A module adds its own tables beside its
 * migration, in its folder (an interface, so that they merge in here):
 *
 *     declare module '../../db/schema.js' {
 *       interface Database { notes: NoteTable }
 *     }
 *
 * The tables below were made before modules declared their own.
 */
export interface Database {
  service_settings: ServiceSettingTable;
  admin_mfa: AdminMfaTable;
  sms_providers: SmsProviderTable;
  access_tokens: AccessTokenTable;
  domains: DomainTable;
  accounts: AccountTable;
  aliases: AliasTable;
  mailbox_app_passwords: AppPasswordTable;
  service_keys: { name: string; value: string; created_at: number };
  audit_log: AuditLogTable;
  jobs: JobTable;
  admin_recovery_codes: RecoveryCodeTable;
  api_keys: ApiKeyTable;
  limits: LimitTable;
  /** One row (id 1): locked by every change to the address space. */
  mail_routing: { id: number; version: number };
  admin_fingerprint: { id: number; fingerprint: string; updated_at: number };
  bans: BanTable;
  firewall_settings: FirewallSettingsTable;
  stats_messages: StatsMessageTable;
  stats_collector: { id: number; state_json: string; updated_at: number };
  dkim_keys: DkimKeyTable;
  dkim_rotations: DkimRotationTable;
  dns_sync: DnsSyncTable;
  deliverability_reports: DeliverabilityReportTable;
  panel_sessions: PanelSessionTable;
  /** Sealed backup secrets: the remote encryption key, remote credentials. */
  backup_secrets: { name: string; value: string; created_at: number; shown_at: number | null };
}

/** A web-panel session: the cookie's id is kept only as its SHA-256; times in ms. */
export type PanelSessionTable = {
  id_hash: string;
  token_sealed: string;
  created_at: number;
  last_seen_at: number;
  expires_at: number;
  fresh_until: number;
};
