import { existsSync, readFileSync } from 'node:fs';
import { isAbsolute, join } from 'node:path';
import type { JailSettings } from '../../config/jail-settings.js';
import { FAIL2BAN_JAILS } from '../../shared/limit-keys.js';
import type { Fail2banJail, LimitValues } from '../../shared/limit-keys.js';
import { renderJails } from './jails.js';
import type { JailRenderOptions, JailThresholds } from './jails.js';
import type { RenderedFile } from '../config-applier/index.js';

export type JailPlanInput = { settings: JailSettings; fail2banDir: string; authLog: string };

/** fail2ban's own log (`logtarget` of fail2ban.local over fail2ban.conf), or what it logs to when that is not a file. */
export function fail2banLogTarget(dir: string): string {
  let target = '/var/log/fail2ban.log';
  for (const name of ['fail2ban.conf', 'fail2ban.local']) {
    const file = join(dir, name);
    if (!existsSync(file)) continue;
    const m = /^\s*logtarget\s*=\s*(\S+)\s*$/m.exec(readFileSync(file, 'utf8'));
    if (m?.[1]) target = m[1];
  }
  return target;
}

/**
 * The jail files of `limits apply`: every jail mailsvc manages with its limits
 * and `bantime.increment`; a jail left out of MAILSVC_FAIL2BAN_JAILS, or whose
 * log file does not exist, is rendered `enabled = false` with the reason
 * (fail2ban refuses to start with an enabled jail whose log is missing).
 * Postfix's jails read MAILSVC_MAIL_LOG when it exists (Postfix's
 * `maillog_file`, or rsyslog's mail.log), the systemd journal otherwise.
 */
export function renderJailPlan(values: LimitValues, input: JailPlanInput): RenderedFile[] {
  const { settings } = input;
  const thresholds: JailThresholds = {};
  for (const jail of FAIL2BAN_JAILS) {
    thresholds[jail] = {
      maxretry: values[`fail2ban-${jail}-maxretry`],
      findtime: values[`fail2ban-${jail}-findtime`],
      bantime: values[`fail2ban-${jail}-bantime`],
      increment: settings.bantimeIncrement,
    };
  }
  const logTarget = fail2banLogTarget(input.fail2banDir);
  // MAILSVC_MAIL_LOG=journal: the journal even when a (stale) file is there.
  const mailLog = settings.mailLog !== 'journal' && existsSync(settings.mailLog) ? settings.mailLog : null;
  const files: Partial<Record<Fail2banJail, string>> = { nginx: settings.nginxErrorLog, 'mailsvc-auth': input.authLog, recidive: logTarget };
  const disabled: Partial<Record<Fail2banJail, string>> = {};
  for (const jail of FAIL2BAN_JAILS) {
    const file = files[jail];
    if (!settings.enabled.includes(jail)) disabled[jail] = 'not listed in MAILSVC_FAIL2BAN_JAILS';
    else if (jail === 'recidive' && !isAbsolute(logTarget)) disabled[jail] = `fail2ban logs to ${logTarget}, not a file recidive can read`;
    else if (file !== undefined && !existsSync(file)) disabled[jail] = `its log ${file} does not exist`;
  }
  const opts: JailRenderOptions = { configDir: input.fail2banDir, mailLog, authLog: input.authLog, fail2banLog: logTarget, nginxErrorLog: settings.nginxErrorLog, disabled };
  return renderJails(thresholds, opts);
}
