import { isAbsolute } from 'node:path';
import { SettingsError } from './settings-error.js';

export type StatsSettings = Readonly<{
  /** MAILSVC_MAIL_LOG: the Postfix log `stats collect` reads (its `.1` and `.N.gz` rotations too). */
  mailLog: string;
  /** MAILSVC_METRICS_TOKEN: a scrape token that may read GET /metrics (and nothing else); unset: the administrator only. */
  metricsToken: string | undefined;
}>;

type Source = Record<string, string | undefined>;

export function loadStatsSettings(src: Source): StatsSettings {
  const mailLog = src.MAILSVC_MAIL_LOG || '/var/log/mail.log';
  if (!isAbsolute(mailLog)) throw new SettingsError('MAILSVC_MAIL_LOG', `must be an absolute path, got "${mailLog}"`);
  const token = src.MAILSVC_METRICS_TOKEN || undefined;
  // A short token could be guessed by a scraper's neighbours; the scrape endpoint is not behind the login lockout.
  if (token !== undefined && (token.length < 24 || /\s/.test(token))) throw new SettingsError('MAILSVC_METRICS_TOKEN', 'must be at least 24 characters without spaces (for example: openssl rand -hex 24)');
  return Object.freeze({ mailLog, metricsToken: token });
}
