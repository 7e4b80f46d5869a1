import { chmodSync, chownSync, existsSync, readFileSync, readdirSync, renameSync } from 'node:fs';
import { join } from 'node:path';
import { isBackupSecretKey } from '../../config/backup-secrets-file.js';
import { readSettingsFile, writeSettingsKey } from '../../config/settings-file.js';
import { BACKUP_SECRETS_FILE, OLD_HELPER_ENV, OLD_SERVICE_ENV, SETTINGS_FILE, UNIT_DIR } from './ownership-plan.js';

/**
 * Hosts installed before mailsvc.conf was the only settings file kept
 * settings in three more places: /etc/mailsvc/mailsvc.env (EnvironmentFile=
 * of the units), /etc/mailsvc/helper.env (the helper's and the backups'), and
 * Environment= lines of mailsvc.service. `mailsvc install` moves them, once:
 *
 * - every MAILSVC_* setting into mailsvc.conf, as the service saw it (the
 *   unit's Environment=, then mailsvc.env over it, won over the file);
 *   helper.env's into mailsvc.conf where the other two did not set the key;
 * - the backups' secrets (RCLONE_CONFIG_*, MAILSVC_BACKUP_ENCRYPTION_KEY)
 *   into backup-secrets.conf (root:root 0600), never into mailsvc.conf, which
 *   the service user reads;
 * - NODE_EXTRA_CA_CERTS (a private update mirror's CA) as MAILSVC_UPDATE_CA_FILE;
 * - MAILSVC_HELPER=direct (the backup units' mode) nowhere: root's backups do
 *   their root work themselves now.
 *
 * Each old file is then renamed `<name>.migrated` (root:root 0600: it may hold
 * secrets), so a second run finds nothing to move. What it could not move is
 * returned in `left`, with what to do.
 */
export type MigrationReport = { done: string[]; left: string[] };

/** The assignments of systemd's `Environment=` lines: `A=b "C=d e"`, quotes removed. */
export function unitEnvironment(unitText: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const line of unitText.split('\n')) {
    const m = /^Environment=(.*)$/.exec(line.trim());
    if (!m) continue;
    for (const word of (m[1] ?? '').match(/"[^"]*"|'[^']*'|[^\s"']+/g) ?? []) {
      const w = /^["']/.test(word) ? word.slice(1, -1) : word;
      const eq = w.indexOf('=');
      if (eq > 0) out[w.slice(0, eq)] = w.slice(eq + 1);
    }
  }
  return out;
}

/** root:root 0600 (the owner only when this runs as root: a --root render by another user sets the mode). */
function rootOnly(file: string): void {
  if (process.getuid?.() === 0) chownSync(file, 0, 0);
  chmodSync(file, 0o600);
}

/** `<file>.migrated`, or `.migrated.2`, … when an earlier one is kept there. */
function keptName(at: (p: string) => string, file: string): string {
  for (let n = 1; ; n++) {
    const name = `${file}.migrated${n === 1 ? '' : `.${n}`}`;
    if (!existsSync(at(name))) return name;
  }
}

export function migrateOldSettings(at: (p: string) => string): MigrationReport {
  const report: MigrationReport = { done: [], left: [] };
  const conf = at(SETTINGS_FILE);
  const service = at(join(UNIT_DIR, 'mailsvc.service'));
  const fromUnit = existsSync(service) ? unitEnvironment(readFileSync(service, 'utf8')) : {};
  const envFile = existsSync(at(OLD_SERVICE_ENV)) ? readSettingsFile(at(OLD_SERVICE_ENV)) : null;
  const helperFile = existsSync(at(OLD_HELPER_ENV)) ? readSettingsFile(at(OLD_HELPER_ENV)) : null;
  const unitKeys = Object.keys(fromUnit).filter((k) => k.startsWith('MAILSVC_') && k !== 'MAILSVC_HELPER');
  report.left.push(...dropIns(at));
  if (unitKeys.length === 0 && envFile === null && helperFile === null) return report;

  const before = readSettingsFile(conf);
  const settings: Record<string, string> = {};
  const secrets: Record<string, string> = {};
  const notMoved: string[] = [];
  const take = (values: Record<string, string>, source: string, overrides: boolean): void => {
    for (const [key, value] of Object.entries(values)) {
      if (isBackupSecretKey(key)) secrets[key] ??= value;
      else if (key === 'MAILSVC_HELPER' && value === 'direct') continue;
      else if (key === 'NODE_EXTRA_CA_CERTS') settings.MAILSVC_UPDATE_CA_FILE ??= before.MAILSVC_UPDATE_CA_FILE ?? value;
      else if (!key.startsWith('MAILSVC_')) notMoved.push(`${key} (${source})`);
      else if (overrides || !(key in settings)) settings[key] = value;
    }
  };
  take(Object.fromEntries(unitKeys.map((k) => [k, fromUnit[k] ?? ''])), 'mailsvc.service', true);
  if (envFile) take(envFile, OLD_SERVICE_ENV, true);
  if (helperFile) take(helperFile, OLD_HELPER_ENV, false);

  const changed: string[] = [];
  for (const [key, value] of Object.entries(settings)) {
    if (before[key] === value) continue;
    writeSettingsKey(conf, key, value);
    changed.push(before[key] === undefined ? key : `${key} (was ${before[key]} in the file; the service ran with ${value})`);
  }
  if (changed.length > 0) report.done.push(`moved ${changed.length} setting(s) into ${SETTINGS_FILE}: ${changed.join(', ')}`);
  const secretKeys = Object.keys(secrets);
  if (secretKeys.length > 0) {
    const file = at(BACKUP_SECRETS_FILE);
    const had = readSettingsFile(file);
    for (const key of secretKeys) if (!(key in had)) writeSettingsKey(file, key, secrets[key] ?? '');
    // Root's alone: the service user never reads the off-site remotes' credentials.
    rootOnly(file);
    report.done.push(`moved the backups' secrets (${secretKeys.join(', ')}) into ${BACKUP_SECRETS_FILE} (root:root 0600)`);
  }
  if ('NODE_EXTRA_CA_CERTS' in { ...envFile, ...helperFile }) report.left.push(`NODE_EXTRA_CA_CERTS became MAILSVC_UPDATE_CA_FILE (the update feed's CA); nothing else trusts that CA now`);
  if (notMoved.length > 0) report.left.push(`not moved (not mailsvc settings): ${notMoved.join(', ')}; they stay in the renamed file; a runtime variable a unit needs goes into a drop-in (systemctl edit <unit>)`);
  for (const old of [OLD_SERVICE_ENV, OLD_HELPER_ENV]) {
    if (!existsSync(at(old))) continue;
    const kept = keptName(at, old);
    renameSync(at(old), at(kept));
    rootOnly(at(kept));
    report.done.push(`${old} is no longer read: its settings are in ${SETTINGS_FILE}; kept as ${kept}`);
  }
  if (unitKeys.length > 0 && envFile === null && helperFile === null && changed.length === 0) report.done.push(`mailsvc.service's settings (${unitKeys.join(', ')}) are already in ${SETTINGS_FILE}`);
  return report;
}

/** Drop-ins (systemctl edit) that still give a unit settings: the installer never writes them, so it only says where they are. */
function dropIns(at: (p: string) => string): string[] {
  const dir = at(UNIT_DIR);
  if (!existsSync(dir)) return [];
  const found: string[] = [];
  for (const d of readdirSync(dir).filter((n) => /^mailsvc.*\.d$/.test(n))) {
    for (const f of readdirSync(join(dir, d)).filter((n) => n.endsWith('.conf'))) {
      const text = readFileSync(join(dir, d, f), 'utf8');
      if (/^Environment=.*\bMAILSVC_|^EnvironmentFile=/m.test(text)) found.push(join(UNIT_DIR, d, f));
    }
  }
  return found.length > 0 ? [`a drop-in still sets MAILSVC_* or an EnvironmentFile=: ${found.join(', ')}; move those settings into ${SETTINGS_FILE} and remove the lines (the environment wins over the file)`] : [];
}
