import { isAbsolute } from 'node:path';
import { SettingsError } from './settings-error.js';

export type StatsSettings = Readonly<{
  /**
   * MAILSVC_MAIL_LOG: the Postfix log `stats collect` reads (its `.1` and `.N.gz`
   * rotations too); the systemd journal when there is no such file, or always
   * with the value `journal`.
   */
  mailLog: string;
  /** MAILSVC_METRICS_TOKEN: a scrape token that may read GET /metrics (and nothing else); unset: the administrator only. */
  metricsToken: string | undefined;
  /** MAILSVC_MAIL_STORAGE: the mail storage root (Dovecot's mail location), whose size the report shows. */
  mailStorage: string;
  /** MAILSVC_RSPAMD_CONTROLLER_URL: Rspamd's controller, for its statistics (`/stat`). */
  rspamdController: string;
  /** MAILSVC_REPORT_DISK_PERCENT: a file system used more than this is flagged. */
  reportDiskPercent: number;
  /** MAILSVC_REPORT_QUEUE_LIMIT: more messages than this in the mail queue is flagged. */
  reportQueueLimit: number;
  /** MAILSVC_PROBE_TIMEOUT_MS: how long each probe of the report, topology and /health/details may take. */
  probeTimeoutMs: number;
}>;

type Source = Record<string, string | undefined>;

function whole(src: Source, key: string, dflt: number, min: number, max: number): number {
  const v = src[key];
  if (v === undefined || v === '') return dflt;
  const n = /^\d+$/.test(v) ? Number(v) : NaN;
  if (!(n >= min && n <= max)) throw new SettingsError(key, `must be a whole number from ${min} to ${max}, got "${v}"`);
  return n;
}

export function loadStatsSettings(src: Source): StatsSettings {
  const mailLog = src.MAILSVC_MAIL_LOG || '/var/log/mail.log';
  if (mailLog !== 'journal' && !isAbsolute(mailLog)) throw new SettingsError('MAILSVC_MAIL_LOG', `must be an absolute path or journal, got "${mailLog}"`);
  const token = src.MAILSVC_METRICS_TOKEN || undefined;
  // A short token could be guessed by a scraper's neighbours; the scrape endpoint is not behind the login lockout.
  if (token !== undefined && (token.length < 24 || /\s/.test(token))) throw new SettingsError('MAILSVC_METRICS_TOKEN', 'must be at least 24 characters without spaces (for example: openssl rand -hex 24)');
  const storage = src.MAILSVC_MAIL_STORAGE || '/var/vmail';
  if (!isAbsolute(storage)) throw new SettingsError('MAILSVC_MAIL_STORAGE', `must be an absolute path, got "${storage}"`);
  const controller = src.MAILSVC_RSPAMD_CONTROLLER_URL || 'http://127.0.0.1:11334';
  if (!/^https?:\/\/[^/\s]+\/?$/.test(controller)) throw new SettingsError('MAILSVC_RSPAMD_CONTROLLER_URL', 'must be http(s)://host:port');
  return Object.freeze({
    mailLog, metricsToken: token, mailStorage: storage, rspamdController: controller.replace(/\/$/, ''),
    reportDiskPercent: whole(src, 'MAILSVC_REPORT_DISK_PERCENT', 90, 1, 100),
    reportQueueLimit: whole(src, 'MAILSVC_REPORT_QUEUE_LIMIT', 100, 0, 10_000_000),
    probeTimeoutMs: whole(src, 'MAILSVC_PROBE_TIMEOUT_MS', 3000, 100, 60_000),
  });
}
