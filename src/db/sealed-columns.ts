/**
 * Every column that holds a value sealed by SecretBox. The seal's associated
 * data names table, row and column, so a sealed value copied into another
 * place does not open there. `secrets rotate-key` walks this list.
 */
export const SEALED_COLUMNS = [
  { table: 'admin_mfa', key: 'id', column: 'totp_secret' },
  { table: 'sms_providers', key: 'code', column: 'client_secret' },
  { table: 'sms_providers', key: 'code', column: 'api_key' },
  { table: 'service_keys', key: 'name', column: 'value' },
  { table: 'dkim_keys', key: 'id', column: 'private_key' },
  { table: 'dns_sync', key: 'domain', column: 'api_token' },
  { table: 'backup_secrets', key: 'name', column: 'value' },
  { table: 'portal_totp', key: 'account_id', column: 'secret_sealed' },
  { table: 'certificates', key: 'name', column: 'private_key' },
  { table: 'certificates', key: 'name', column: 'pending_private_key' },
  { table: 'acme_accounts', key: 'id', column: 'account_key' },
] as const;

export function sealContext(table: string, key: string | number, column: string): string {
  return `${table}.${key}.${column}`;
}
